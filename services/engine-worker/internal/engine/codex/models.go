package codex

import (
	"slices"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Model is one model of the catalog.
type Model struct {
	ID   string
	Name string
	// Efforts are the reasoning efforts the model accepts, low to high.
	Efforts []string
	// DefaultEffort is the effort a turn without one (or with one the model
	// does not accept) runs at.
	DefaultEffort string
	// Context is the model's context window, from the model table bundled
	// in the CLI (model/list does not report it).
	Context int64
	// CodeMode: the CLI sends the model its tools in code mode over
	// Responses Lite (the model table's tool_mode code_mode_only and
	// use_responses_lite), a shape only OpenAI's own endpoint is known to
	// take; see Unavailable.
	CodeMode bool
}

var (
	effortsUltra = []string{"low", "medium", "high", "xhigh", "max", "ultra"}
	effortsMax   = []string{"low", "medium", "high", "xhigh", "max"}
)

// DefaultModel is the model a turn without one runs on: the pinned CLI's
// default.
const DefaultModel = "gpt-6.2-sol"

// Models is the catalog of the pinned CLI (0.171.0), as its app-server's
// model/list answers, in its order: keep it in step with the pinned version
// (Version). A model outside it still runs; codex then uses
// fallback metadata and warns.
var Models = []Model{
	{ID: "gpt-6.2-sol", Name: "GPT-6.2-Sol", Efforts: effortsUltra, DefaultEffort: "low", Context: 500_000, CodeMode: true},
	{ID: "gpt-6.2-astra", Name: "GPT-6.2-Astra", Efforts: effortsUltra, DefaultEffort: "low", Context: 272_000, CodeMode: true},
	{ID: "gpt-6.1-terra", Name: "GPT-6.1 Terra", Efforts: effortsUltra, DefaultEffort: "low", Context: 500_000, CodeMode: true},
	{ID: "gpt-6.1-sol", Name: "GPT-6.1-Sol", Efforts: effortsUltra, DefaultEffort: "low", Context: 500_000, CodeMode: true},
	{ID: "gpt-6-astra", Name: "GPT-6-Astra", Efforts: effortsUltra, DefaultEffort: "low", Context: 272_000, CodeMode: true},
	{ID: "gpt-6-sol", Name: "GPT-6-Sol", Efforts: effortsUltra, DefaultEffort: "medium", Context: 272_000, CodeMode: true},
	{ID: "gpt-6-luna", Name: "GPT-6-Luna", Efforts: effortsMax, DefaultEffort: "medium", Context: 272_000, CodeMode: true},
	{ID: "gpt-5.6-sol", Name: "GPT-5.6-Sol", Efforts: effortsUltra, DefaultEffort: "low", Context: 272_000, CodeMode: true},
	{ID: "gpt-5.6-terra", Name: "GPT-5.6-Terra", Efforts: effortsUltra, DefaultEffort: "medium", Context: 272_000, CodeMode: true},
	{ID: "gpt-5.6-luna", Name: "GPT-5.6-Luna", Efforts: effortsMax, DefaultEffort: "medium", Context: 272_000, CodeMode: true},
	{ID: "gpt-5.5", Name: "GPT-5.5", Efforts: []string{"low", "medium", "high", "xhigh"}, DefaultEffort: "medium", Context: 272_000},
}

// codeModeUnavailable is why a CodeMode model is not offered with a model
// endpoint other than OpenAI's.
const codeModeUnavailable = "Codex sends this model its tools in code mode over Responses Lite, which the configured " +
	"model endpoint (not OpenAI's) is not known to accept; gpt-5.5 gets plain function tools"

// Unavailable says why model cannot run with cred, "" when it can (or is
// not in the catalog).
func Unavailable(model string, cred Credential) string {
	m, ok := LookupModel(model)
	base := strings.TrimRight(cred.BaseURL, "/")
	if !ok || !m.CodeMode || base == "" || base == DefaultBaseURL {
		return ""
	}
	return codeModeUnavailable
}

// defaultFor is the model of a turn that names none: DefaultModel, or the
// first model of the catalog that runs with cred.
func defaultFor(cred Credential) string {
	for _, m := range append([]Model{{ID: DefaultModel}}, Models...) {
		if Unavailable(m.ID, cred) == "" {
			return m.ID
		}
	}
	return DefaultModel
}

// LookupModel returns the catalog entry of id.
func LookupModel(id string) (Model, bool) {
	i := slices.IndexFunc(Models, func(m Model) bool { return m.ID == id })
	if i < 0 {
		return Model{}, false
	}
	return Models[i], true
}

// Entry is m as a catalog entry: OpenAI's, text and images in, text out,
// with tools, structured output (turn/start's outputSchema) and a reasoning
// control in Codex's vocabulary. Codex reports no output limit and no
// price, so the entry has neither.
func (m Model) Entry() events.EngineModel {
	return events.EngineModel{ID: m.ID, Name: m.Name, Provider: Provider, Engine: events.EngineCodex,
		Limit: events.ModelLimit{Input: m.Context},
		Modalities: events.ModelModalities{Input: []events.Modality{events.ModalityText, events.ModalityImage},
			Output: []events.Modality{events.ModalityText}},
		Capabilities: events.ModelCapabilities{Reasoning: true, Tools: true, StructuredOutput: true,
			ReasoningControl: &events.ReasoningControl{Levels: events.ReasoningLevels(m.Efforts...), Default: m.DefaultEffort}}}
}

// baseEfforts are the efforts every reasoning model takes.
var baseEfforts = []string{"low", "medium", "high"}

// ClampEffort is engine.ClampEffort on the model's catalog entry: the
// requested effort if the model accepts it, else the model's default (so
// stale tokens, "minimal" or a level another model had, become the
// default). A model outside the catalog takes the efforts every reasoning
// model takes, and medium for anything else.
func ClampEffort(model, effort string) string {
	m, ok := LookupModel(model)
	if !ok {
		m = Model{ID: model, Efforts: baseEfforts, DefaultEffort: "medium"}
	}
	return engine.ClampEffort(m.Entry(), effort)
}
