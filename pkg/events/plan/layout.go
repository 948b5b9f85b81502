package plan

import "clopen.dev/pkg/events"

// The layout vocabulary lives here, beside Apply, because both sides of the
// placement read it and neither may depend on the other: artifacts renders
// subagent documents in every Dialect and points its texts into the Store,
// and each engine adapter of the worker declares its Layout, which Render
// turns into the plan Apply writes. Like the rest of pkg/events it is the
// standard library only, so the worker links nothing of the artifacts module.

// Layout is where one engine reads Clopen's artifacts: its own facts,
// declared by its adapter beside its other facts (its pin, its command
// line). Paths are relative to the config dir the adapter points the engine
// at (CLAUDE_CONFIG_DIR, CODEX_HOME, ...), or to the repository for project
// scope. Every engine also gets the canonical Store, which no layout names.
type Layout struct {
	Engine events.EngineType
	// MemoryFile is the engine's global memory file; every PreambleRegion
	// row writes its marker block there.
	MemoryFile string
	// PromptScoped engines keep a process (or server) across sessions, so
	// their disk config cannot express one session's profile: skills and
	// subagents reach them in the run's prompt preamble instead, and their
	// marker blocks on disk stay empty.
	PromptScoped bool
	// ReadsMemoryFile is false for engines that ignore the memory file;
	// they get the global instructions in the prompt as well.
	ReadsMemoryFile bool
	// Rows say where each kind of artifact goes; an engine without a
	// subagent row cannot delegate and is told nothing of subagents.
	Rows []Row
	// Why records the reason for these choices.
	Why string
}

// Row is where one kind of artifact goes for an engine.
type Row struct {
	Type  string // events.Artifact*
	Scope string // events.ScopeGlobal | events.ScopeProject
	// Path is a directory, or the file of a PreambleRegion or JSONKeys row.
	Path  string
	Shape Shape
	// Exclusive dirs hold only Clopen's entries and are pruned of the rest;
	// shared dirs lose only Clopen-managed entries no longer active.
	Exclusive bool
	// Native is true when the engine reads the artifact where it is put;
	// false for Clopen's stand-ins (marker blocks the engine reads as text).
	Native  bool
	Dialect Dialect // for SingleMD subagents
	Key     string  // for JSONKeys: the managed top-level key
}

// Shape is how an artifact is laid out.
type Shape string

// The shapes.
const (
	FolderMD       Shape = "folder-md"       // <dir>/<slug>/SKILL.md (+ the skill's other files)
	SingleMD       Shape = "single-md"       // <dir>/<slug>.md
	PreambleRegion Shape = "preamble-region" // a marker block in the memory file
	JSONKeys       Shape = "json"            // managed top-level keys of a JSON settings file
)

// Dialect is the document format of a SingleMD subagent.
type Dialect string

// The dialects.
const (
	DialectClaude   Dialect = "claude"   // name, description, tools (comma list), model
	DialectOpenCode Dialect = "opencode" // description, mode: subagent, model; tools dropped
)

// Dialects lists every dialect: artifacts writes each subagent in all of
// them (events.ContentSubagent.Documents).
func Dialects() []Dialect { return []Dialect{DialectClaude, DialectOpenCode} }

// Store is the config-dir folder of the canonical skill store: every active
// skill, slash-only ones too, for every engine. Preambles, slash expansion
// and `uses` blocks point into it.
const Store = ".clopen/skills"

// StoreSkillPath is the SKILL.md of slug in the store, as the agent sees it
// (the worker resolves the token).
func StoreSkillPath(slug string) string {
	return events.ConfigDirToken + "/" + Store + "/" + slug + "/SKILL.md"
}

// Global returns the global rows of typ, in layout order.
func (l Layout) Global(typ string) []Row {
	var out []Row
	for _, r := range l.Rows {
		if r.Type == typ && r.Scope == events.ScopeGlobal {
			out = append(out, r)
		}
	}
	return out
}

// Block reports whether typ reaches the engine as a marker block in its
// memory file (a PreambleRegion row).
func (l Layout) Block(typ string) bool {
	for _, r := range l.Global(typ) {
		if r.Shape == PreambleRegion {
			return true
		}
	}
	return false
}

// Delegates reports whether the engine is told about subagents.
func (l Layout) Delegates() bool { return len(l.Global(events.ArtifactSubagent)) > 0 }
