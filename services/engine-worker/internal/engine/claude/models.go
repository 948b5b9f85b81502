package claude

import (
	"slices"

	"clopen.dev/pkg/events"
)

// Model is one model of the catalog.
type Model struct {
	ID   string // what --model gets
	Name string
	// Levels are the reasoning levels the model accepts, low to high; the
	// first entry after "off" (when present) is not the default: Default is.
	Levels  []string
	Default string
	// Context and Output are the model's token limits, Cost its list price,
	// as the pinned CLI's own model table has them.
	Context, Output int64
	Cost            events.ModelCost
}

// The reasoning levels Clopen offers for Claude Code.
const (
	LevelOff    = "off"    // thinking disabled (models that allow it)
	LevelAuto   = "auto"   // adaptive thinking, the CLI picks the effort
	LevelLow    = "low"    // adaptive thinking with --effort low
	LevelMedium = "medium" // ... medium
	LevelHigh   = "high"   // ... high
	LevelXHigh  = "xhigh"  // ... xhigh
	LevelMax    = "max"    // ... max
)

// effortLevels are the levels that become --effort.
var effortLevels = []string{LevelLow, LevelMedium, LevelHigh, LevelXHigh, LevelMax}

// adaptive are the levels of the models with adaptive thinking and effort.
// Their thinking cannot be turned off (the CLI's initialize reports
// supportsThinkingOff false, and --thinking disabled leaves it adaptive).
var adaptive = []string{LevelAuto, LevelLow, LevelMedium, LevelHigh, LevelXHigh, LevelMax}

// DefaultModel is the model a turn without one runs on.
const DefaultModel = "claude-opus-5-5"

// Models is the catalog of the pinned CLI (2.1.332), the default model
// first: the models its initialize response lists, resolved to their ids,
// with the context window, output limit and price of the model table baked
// into the binary (cache writes at the 5-minute rate). Every id here was run
// through the CLI; a model the CLI does not know fails at the provider.
// TestCatalogInStepWithCLI checks the table against the pinned CLI.
var Models = []Model{
	{ID: "claude-opus-5-5", Name: "Claude Opus 5.5", Levels: adaptive, Default: LevelAuto, Context: 1_000_000, Output: 128_000,
		Cost: events.ModelCost{Input: 4, Output: 20, CacheRead: 0.2, CacheWrite: 5}},
	{ID: "claude-fable-5-2", Name: "Claude Fable 5.2", Levels: adaptive, Default: LevelAuto, Context: 1_000_000, Output: 128_000,
		Cost: events.ModelCost{Input: 8, Output: 40, CacheRead: 0.2, CacheWrite: 10}},
	{ID: "claude-sonnet-5-5", Name: "Claude Sonnet 5.5", Levels: adaptive, Default: LevelAuto, Context: 1_000_000, Output: 128_000,
		Cost: events.ModelCost{Input: 2, Output: 10, CacheRead: 0.1, CacheWrite: 2.5}},
	// Prompts over 100k tokens cost five times as much on Haiku 5.5; the
	// catalog gives the base price.
	{ID: "claude-haiku-5-5", Name: "Claude Haiku 5.5", Levels: adaptive, Default: LevelAuto, Context: 1_000_000, Output: 128_000,
		Cost: events.ModelCost{Input: 0.1, Output: 0.5, CacheRead: 0.01, CacheWrite: 0.125}},
	// An older model with budgeted thinking: it can be turned off but takes
	// no effort.
	{ID: "claude-sonnet-4-5", Name: "Claude Sonnet 4.5", Levels: []string{LevelOff, LevelAuto}, Default: LevelAuto, Context: 200_000, Output: 64_000,
		Cost: events.ModelCost{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}},
}

// LookupModel returns the catalog entry of id.
func LookupModel(id string) (Model, bool) {
	i := slices.IndexFunc(Models, func(m Model) bool { return m.ID == id })
	if i < 0 {
		return Model{}, false
	}
	return Models[i], true
}

// ClampLevel returns level if the model accepts it, else the model's
// default. A model outside the catalog accepts every level; an unknown
// token becomes auto.
func ClampLevel(model, level string) string {
	m, ok := LookupModel(model)
	if !ok {
		m = Model{Levels: append([]string{LevelOff}, adaptive...), Default: LevelAuto}
	}
	if slices.Contains(m.Levels, level) {
		return level
	}
	return m.Default
}

// reasoningArgs are the CLI flags of a level (already clamped). Thinking is
// shown summarized, so reasoning streams have text.
func reasoningArgs(level string) []string {
	switch {
	case level == LevelOff:
		return []string{"--thinking", "disabled"}
	case slices.Contains(effortLevels, level):
		return []string{"--thinking-display", "summarized", "--effort", level}
	}
	return []string{"--thinking-display", "summarized"}
}
