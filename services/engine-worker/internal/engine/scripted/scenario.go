package scripted

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/events"
)

//go:embed scenarios/*.json
var builtin embed.FS

// DefaultScenario is played when the model id names none.
const DefaultScenario = "hello"

// Scenario is a scripted turn: steps played in order, then a result.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Steps       []Step `json:"steps"`
	// Result overrides the usage and cost of the final result.
	Result *ResultStep `json:"result,omitempty"`
}

// Step is one thing the engine does. Exactly one field is set.
type Step struct {
	Text         *TextStep         `json:"text,omitempty"`
	Reasoning    *TextStep         `json:"reasoning,omitempty"`
	Tool         *ToolStep         `json:"tool,omitempty"`
	Agent        *AgentStep        `json:"agent,omitempty"`
	Ask          *AskStep          `json:"ask,omitempty"`
	Permission   *ToolStep         `json:"permission,omitempty"`
	RateLimit    *RateLimitStep    `json:"rateLimit,omitempty"`
	Notification *NotificationStep `json:"notification,omitempty"`
	Compact      *CompactStep      `json:"compact,omitempty"`
	Error        *ErrorStep        `json:"error,omitempty"`
	Sleep        Duration          `json:"sleep,omitempty"`
	Report       *ReportStep       `json:"report,omitempty"`
	Usage        *UsageStep        `json:"usage,omitempty"`
}

// UsageStep is what one model call spent, as an engine that reports its
// usage as it goes does: it is added to the turn's running total, which
// goes out as a usage event (source engine). Without a Result override,
// the final result reports the total.
type UsageStep struct {
	events.TokenUsage
	CostUSD float64 `json:"costUsd,omitempty"`
}

// ReportStep makes the engine report what its run was configured with, as
// one info notification titled "Artifacts": the whole prompt it received
// (with the artifacts preamble of prompt-scoped engines) and each named file
// of its config dir (Request.ConfigDir), so tests and demos can see what the
// worker materialised. Files are relative to the config dir.
type ReportStep struct {
	Files []string `json:"files,omitempty"`
}

// TextStep streams text (or reasoning) as deltas, then the whole message.
type TextStep struct {
	Text  string   `json:"text"`
	Chunk int      `json:"chunk,omitempty"` // characters per delta; default 8
	Delay Duration `json:"delay,omitempty"` // pause between deltas
	// Repeat plays Text this many times in one message (long answers).
	Repeat int `json:"repeat,omitempty"`
}

// ToolStep is a tool call and its result.
type ToolStep struct {
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Result  string          `json:"result"`
	IsError bool            `json:"isError,omitempty"`
	Delay   Duration        `json:"delay,omitempty"` // how long the tool "runs"
}

// AgentStep delegates to a sub-agent whose messages are tagged with the
// Agent call as parent.
type AgentStep struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagentType,omitempty"`
	Steps        []Step `json:"steps"` // text and tool steps only
	Result       string `json:"result"`
}

// AskStep asks the user: the AskUserQuestion call goes out, and after Delay
// the engine parks on Interaction.AskUser. A real agent takes that moment
// too (Claude Code asks with can_use_tool some 80 ms after the tool_use), and
// a client may answer within it.
type AskStep struct {
	events.AskUserQuestionInput
	Delay Duration `json:"delay,omitempty"`
}

// RateLimitStep reports a rate-limit state.
type RateLimitStep struct {
	Status        string  `json:"status"`
	Utilization   float64 `json:"utilization"`
	RateLimitType string  `json:"rateLimitType,omitempty"`
	ResetsInSecs  int64   `json:"resetsInSecs,omitempty"`
}

// NotificationStep tells the user something the transcript cannot.
type NotificationStep struct {
	Level   string `json:"level"`
	Title   string `json:"title"`
	Message string `json:"message"`
}

// CompactStep marks a context compaction.
type CompactStep struct {
	Trigger   string `json:"trigger"`
	PreTokens int64  `json:"preTokens"`
}

// ErrorStep ends the turn as a provider would fail it.
type ErrorStep struct {
	Message string           `json:"message"`
	Kind    events.ErrorKind `json:"kind,omitempty"`
}

// ResultStep sets the final result's numbers.
type ResultStep struct {
	Usage        *events.TokenUsage `json:"usage,omitempty"`
	TotalCostUSD float64            `json:"totalCostUsd,omitempty"`
	NumTurns     int                `json:"numTurns,omitempty"`
}

// Duration is a time.Duration written as "15ms" in scenario files.
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string like \"15ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

var scenarioName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Library holds the scenarios an engine can play: the built-in ones plus any
// *.json files of an operator's directory (which win on a name clash).
type Library struct {
	scenarios map[string]*Scenario
}

// LoadLibrary reads the built-in scenarios and those in dir (if not empty).
func LoadLibrary(dir string) (*Library, error) {
	lib := &Library{scenarios: map[string]*Scenario{}}
	sub, _ := fs.Sub(builtin, "scenarios")
	if err := lib.load(sub); err != nil {
		return nil, fmt.Errorf("built-in scenarios: %w", err)
	}
	if dir != "" {
		if err := lib.load(os.DirFS(dir)); err != nil {
			return nil, fmt.Errorf("scenarios in %s: %w", dir, err)
		}
	}
	return lib, nil
}

func (l *Library) load(fsys fs.FS) error {
	files, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		sc, err := ParseScenario(b)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if want := strings.TrimSuffix(filepath.Base(f), ".json"); sc.Name != want {
			return fmt.Errorf("%s: name %q must match the file name", f, sc.Name)
		}
		l.scenarios[sc.Name] = sc
	}
	return nil
}

// ParseScenario decodes and validates one scenario file.
func ParseScenario(b []byte) (*Scenario, error) {
	var sc Scenario
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("decode scenario: %w", err)
	}
	if !scenarioName.MatchString(sc.Name) {
		return nil, fmt.Errorf("scenario name %q: want lower-case letters, digits, - and _", sc.Name)
	}
	if err := validateSteps(sc.Steps, false); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	return &sc, nil
}

func validateSteps(steps []Step, child bool) error {
	for i, st := range steps {
		n := 0
		for _, set := range []bool{st.Text != nil, st.Reasoning != nil, st.Tool != nil, st.Agent != nil, st.Ask != nil,
			st.Permission != nil, st.RateLimit != nil, st.Notification != nil, st.Compact != nil, st.Error != nil, st.Sleep != 0,
			st.Report != nil, st.Usage != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("step %d: want exactly one action, got %d", i, n)
		}
		for _, t := range []*ToolStep{st.Tool, st.Permission} {
			if t != nil && (t.Name == "" || (len(t.Input) > 0 && !json.Valid(t.Input))) {
				return fmt.Errorf("step %d: a tool needs a name and a JSON input", i)
			}
		}
		if child && st.Text == nil && st.Tool == nil && st.Sleep == 0 {
			return fmt.Errorf("step %d: a sub-agent may only have text, tool and sleep steps", i)
		}
		if st.Agent != nil {
			if err := validateSteps(st.Agent.Steps, true); err != nil {
				return fmt.Errorf("step %d (agent): %w", i, err)
			}
		}
		if st.Report != nil {
			for _, f := range st.Report.Files {
				if !filepath.IsLocal(f) {
					return fmt.Errorf("step %d: report file %q must be a relative path inside the config dir", i, f)
				}
			}
		}
		if u := st.Usage; u != nil && (u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadInputTokens < 0 ||
			u.CacheCreationInputTokens < 0 || u.CostUSD < 0) {
			return fmt.Errorf("step %d: usage cannot be negative", i)
		}
		if st.Ask != nil && len(st.Ask.Questions) == 0 {
			return fmt.Errorf("step %d: ask needs at least one question", i)
		}
	}
	return nil
}

// Names lists the scenarios, sorted.
func (l *Library) Names() []string {
	out := make([]string, 0, len(l.scenarios))
	for n := range l.scenarios {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrUnknownScenario is returned by Resolve for a name the library lacks.
var ErrUnknownScenario = errors.New("unknown scripted scenario")

// Resolve turns a model id into the scenario to play: "" or "scripted" means
// the default; "scripted/<name>" or "<name>" picks one; query parameters
// override every text step: deltas=N (split into N deltas), chunk=N,
// delay=15ms (between deltas).
func (l *Library) Resolve(model string) (*Scenario, error) {
	name, query, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(model, "scripted"), "/"), "?")
	if name == "" {
		name = DefaultScenario
	}
	sc, ok := l.scenarios[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (have %s)", ErrUnknownScenario, name, strings.Join(l.Names(), ", "))
	}
	if query == "" {
		return sc, nil
	}
	params, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("scenario parameters %q: %w", query, err)
	}
	cp := *sc
	cp.Steps = append([]Step(nil), sc.Steps...)
	for i, st := range cp.Steps {
		if st.Text == nil {
			continue
		}
		t := *st.Text
		if v := params.Get("deltas"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1_000_000 {
				return nil, fmt.Errorf("scenario parameter deltas=%q: want 1..1000000", v)
			}
			chunk := t.Chunk
			if chunk <= 0 {
				chunk = 8
			}
			t.Repeat = max(1, n*chunk/max(1, len(t.Text)))
		}
		if v := params.Get("chunk"); v != "" {
			if t.Chunk, err = strconv.Atoi(v); err != nil || t.Chunk < 1 {
				return nil, fmt.Errorf("scenario parameter chunk=%q: want a positive number", v)
			}
		}
		if v := params.Get("delay"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("scenario parameter delay=%q: want a duration", v)
			}
			t.Delay = Duration(d)
		}
		cp.Steps[i].Text = &t
	}
	return &cp, nil
}
