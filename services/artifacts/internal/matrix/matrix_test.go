package matrix

import (
	"testing"

	"clopen.dev/pkg/events"
)

// TestEveryEngineHasConsistentRows checks the table against the traits for
// every engine type of pkg/events.
func TestEveryEngineHasConsistentRows(t *testing.T) {
	for _, e := range events.EngineTypes() {
		tr, ok := TraitsOf(e)
		if !ok {
			t.Errorf("%s: no traits", e)
			continue
		}
		if got := Rows(events.ArtifactInstruction, e, events.ScopeGlobal); len(got) != 1 || got[0].Path != tr.MemoryFile {
			t.Errorf("%s: instruction rows %+v, want one in %s", e, got, tr.MemoryFile)
		}
		if got := Rows(events.ArtifactSkill, e, events.ScopeGlobal); len(got) < 2 || got[0].Set != Invocable {
			t.Errorf("%s: skill rows %+v, want the store and the engine's own", e, got)
		}
		subs := Rows(events.ArtifactSubagent, e, events.ScopeGlobal)
		if (len(subs) > 0) != tr.CanDelegateSubagents {
			t.Errorf("%s: %d subagent rows but CanDelegateSubagents=%v", e, len(subs), tr.CanDelegateSubagents)
		}
		for _, typ := range []string{events.ArtifactSkill, events.ArtifactSubagent, events.ArtifactInstruction} {
			if r, ok := Synthetic(typ, e); ok && r.Path != tr.MemoryFile {
				t.Errorf("%s %s: block in %s, memory file is %s", e, typ, r.Path, tr.MemoryFile)
			}
		}
	}
	for _, r := range All() {
		if r.Shape == PreambleRegion && (r.Region == "" || r.Ownership != events.OwnMarkerBlock) {
			t.Errorf("row %+v: a preamble region needs a marker id and marker ownership", r)
		}
		if r.Engine != AnyEngine && !r.Engine.Valid() {
			t.Errorf("row %+v: unknown engine", r)
		}
	}
}

func TestPredicates(t *testing.T) {
	tests := []struct {
		give                           events.EngineType
		promptScoped, reads, delegates bool
	}{
		{events.EngineClaudeCode, false, true, true},
		{events.EngineCodex, true, true, false},
		{events.EngineCopilot, true, true, false},
		{events.EngineOpenCode, true, true, true},
		{events.EngineQwen, false, true, false},
		{events.EnginePi, false, true, true},
		{events.EngineCursor, true, false, true},
		{events.EngineCline, true, false, true},
		{events.EngineGemini, true, true, false},
		{events.EngineACP, true, false, false},
		{events.EngineScripted, true, true, true},
	}
	for _, tt := range tests {
		if PromptScoped(tt.give) != tt.promptScoped || ReadsGlobalMemoryFile(tt.give) != tt.reads || CanDelegateSubagents(tt.give) != tt.delegates {
			t.Errorf("%s: promptScoped %v reads %v delegates %v, want %v %v %v", tt.give, PromptScoped(tt.give),
				ReadsGlobalMemoryFile(tt.give), CanDelegateSubagents(tt.give), tt.promptScoped, tt.reads, tt.delegates)
		}
	}
}
