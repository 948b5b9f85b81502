package events

import (
	"errors"
	"fmt"
)

// EngineModel is one entry of an engine's model catalog, as the model picker
// shows it and structured generation resolves it:
//
//	{"id","name","provider","engine","account":{"id","name"},
//	 "limit":{"input","output"},
//	 "modalities":{"input":[…],"output":[…]},
//	 "capabilities":{"reasoning","tools","structuredOutput",
//	   "reasoningControl":{"levels":[{"value","label"}],"default"},"requiresAuthMode"},
//	 "cost":{"input","output","cacheRead","cacheWrite"},"unavailable"}
//
// reasoningControl, requiresAuthMode, cost and unavailable are omitted when
// absent. An engine lists its default model first.
type EngineModel struct {
	ID       string     `json:"id"` // what the engine is given as its model
	Name     string     `json:"name"`
	Provider string     `json:"provider"` // the provider serving it: anthropic, openai, clopen…
	Engine   EngineType `json:"engine"`
	// Account is the engine account the catalog was read with; an empty ID
	// means the engine's active account.
	Account      AccountRef        `json:"account"`
	Limit        ModelLimit        `json:"limit"`
	Modalities   ModelModalities   `json:"modalities"`
	Capabilities ModelCapabilities `json:"capabilities"`
	// Cost is nil when the engine does not know it: never fabricated.
	Cost *ModelCost `json:"cost,omitempty"`
	// Unavailable says why the model cannot run with the account and
	// endpoint in force; "" when it can. Such a model is listed so that
	// people see why it is not offered: it is never a default, and a turn
	// on it fails at once with this reason.
	Unavailable string `json:"unavailable,omitempty"`
}

// ModelLimit is a model's token limits; 0 means unknown (a client shows "?"
// rather than a full context bar).
type ModelLimit struct {
	Input  int64 `json:"input"` // the context window
	Output int64 `json:"output"`
}

// ModelModalities lists what a model takes in and gives out. Attachments
// need the model's modality and the adapter's support.
type ModelModalities struct {
	Input  []Modality `json:"input"`
	Output []Modality `json:"output"`
}

// Modality is a kind of content. The vocabulary is append-only.
type Modality string

// The modalities.
const (
	ModalityText  Modality = "text"
	ModalityImage Modality = "image"
	ModalityAudio Modality = "audio"
	ModalityVideo Modality = "video"
	ModalityPDF   Modality = "pdf"
)

// Valid reports whether m is one of the modalities.
func (m Modality) Valid() bool {
	return oneOf(m, []Modality{ModalityText, ModalityImage, ModalityAudio, ModalityVideo, ModalityPDF})
}

// ModelCapabilities says what a model can do.
type ModelCapabilities struct {
	Reasoning        bool `json:"reasoning"`
	Tools            bool `json:"tools"`
	StructuredOutput bool `json:"structuredOutput"`
	// ReasoningControl is nil for a model without an effort knob: clients
	// hide the selector and messages carry no reasoningEffort.
	ReasoningControl *ReasoningControl `json:"reasoningControl,omitempty"`
	// RequiresAuthMode names the kind of account the model needs, "" any.
	RequiresAuthMode AuthMode `json:"requiresAuthMode,omitempty"`
}

// AuthMode is the kind of account a model needs. The vocabulary is
// append-only.
type AuthMode string

// The auth modes.
const (
	AuthChatGPT AuthMode = "chatgpt"
	AuthAPIKey  AuthMode = "api_key"
)

// Valid reports whether a is one of the auth modes.
func (a AuthMode) Valid() bool { return a == AuthChatGPT || a == AuthAPIKey }

// ReasoningControl is a model's reasoning-effort knob: its levels from low
// to high, in the engine's own vocabulary, and the level a turn without a
// choice gets, which is one of them.
type ReasoningControl struct {
	Levels  []ReasoningLevel `json:"levels"`
	Default string           `json:"default"`
}

// ReasoningLevel is one level: Value is the engine's native token, Label
// what clients show.
type ReasoningLevel struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// Has reports whether value is one of the levels.
func (rc ReasoningControl) Has(value string) bool {
	for _, l := range rc.Levels {
		if l.Value == value {
			return true
		}
	}
	return false
}

// ModelCost is a model's list price in US dollars per million tokens.
type ModelCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// ReasoningLevelLabel is the label clients show for a level token: "X-High"
// for xhigh, the token capitalised for the common ones, the token itself
// otherwise.
func ReasoningLevelLabel(value string) string {
	switch value {
	case "off", "auto", "adaptive", "minimal", "low", "medium", "high", "max", "ultra":
		return string(value[0]-'a'+'A') + value[1:]
	case "xhigh":
		return "X-High"
	}
	return value
}

// ReasoningLevels builds levels from tokens, labelled by ReasoningLevelLabel.
func ReasoningLevels(values ...string) []ReasoningLevel {
	out := make([]ReasoningLevel, len(values))
	for i, v := range values {
		out[i] = ReasoningLevel{Value: v, Label: ReasoningLevelLabel(v)}
	}
	return out
}

// MarshalJSON implements json.Marshaler: the canonical form, with nil
// modality lists as [] and every vocabulary checked, so that whatever is
// encoded decodes again.
func (m EngineModel) MarshalJSON() ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, encodeErr("engine model", err)
	}
	type plain EngineModel
	p := plain(m)
	p.Modalities.Input = orEmpty(p.Modalities.Input)
	p.Modalities.Output = orEmpty(p.Modalities.Output)
	if rc := p.Capabilities.ReasoningControl; rc != nil && rc.Levels == nil {
		c := *rc
		c.Levels = []ReasoningLevel{}
		p.Capabilities.ReasoningControl = &c
	}
	return marshal(p)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (m EngineModel) check() error {
	if m.ID == "" {
		return errors.New("id: missing")
	}
	errs := []error{checkEnum("engine", m.Engine, true), checkEnum("capabilities.requiresAuthMode", m.Capabilities.RequiresAuthMode, false)}
	for _, list := range [][]Modality{m.Modalities.Input, m.Modalities.Output} {
		for _, mod := range list {
			errs = append(errs, checkEnum("modalities", mod, true))
		}
	}
	if rc := m.Capabilities.ReasoningControl; rc != nil && !rc.Has(rc.Default) {
		errs = append(errs, fmt.Errorf("capabilities.reasoningControl.default: %q is not one of the levels", rc.Default))
	}
	return firstErr(errs...)
}

// UnmarshalJSON decodes strictly, as DecodeEngineModel does.
func (m *EngineModel) UnmarshalJSON(data []byte) error {
	v, err := DecodeEngineModel(data)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// DecodeEngineModel decodes one catalog entry. A wrong JSON type, a missing
// id or engine, a value outside a vocabulary, or a reasoning default that is
// not one of the levels is a *DecodeError naming the field; unknown fields
// are ignored.
func DecodeEngineModel(data []byte) (EngineModel, error) {
	var err error
	d := openObject(data, "", &err)
	m := EngineModel{
		ID:       d.reqStr("id"),
		Name:     d.str("name"),
		Provider: d.str("provider"),
		Engine:   readEnum[EngineType](d, "engine", true),
	}
	a := d.obj("account")
	m.Account = AccountRef{ID: a.str("id"), Name: a.str("name")}
	l := d.obj("limit")
	m.Limit = ModelLimit{Input: l.int64("input"), Output: l.int64("output")}
	mods := d.obj("modalities")
	m.Modalities = ModelModalities{Input: readModalities(mods, "input"), Output: readModalities(mods, "output")}
	c := d.obj("capabilities")
	m.Capabilities = ModelCapabilities{
		Reasoning:        c.boolean("reasoning"),
		Tools:            c.boolean("tools"),
		StructuredOutput: c.boolean("structuredOutput"),
		RequiresAuthMode: readEnum[AuthMode](c, "requiresAuthMode", false),
	}
	if rc, ok := c.optObj("reasoningControl"); ok {
		ctl := &ReasoningControl{Levels: []ReasoningLevel{}, Default: rc.str("default")}
		rc.each("levels", func(e *dec) {
			ctl.Levels = append(ctl.Levels, ReasoningLevel{Value: e.reqStr("value"), Label: e.str("label")})
		})
		if !rc.failed() && !ctl.Has(ctl.Default) {
			rc.failf("default", "%q is not one of the levels", ctl.Default)
		}
		m.Capabilities.ReasoningControl = ctl
	}
	if cost, ok := d.optObj("cost"); ok {
		m.Cost = &ModelCost{Input: cost.float("input"), Output: cost.float("output"),
			CacheRead: cost.float("cacheRead"), CacheWrite: cost.float("cacheWrite")}
	}
	m.Unavailable = d.str("unavailable")
	if err != nil {
		return EngineModel{}, withType(err, "engine model")
	}
	return m, nil
}

func readModalities(d *dec, key string) []Modality {
	out := []Modality{}
	for i, s := range d.strs(key) {
		mod := Modality(s)
		if !mod.Valid() {
			d.failf(index(key, i), "invalid value %q", s)
			return nil
		}
		out = append(out, mod)
	}
	return out
}
