package resolve

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
)

// TestScenario92 is regression scenario 92 exactly.
func TestScenario92(t *testing.T) {
	global := events.PermissionRules{Deny: []string{"Bash"}}
	project := events.PermissionRules{Allow: []string{"Read"}}
	got := MergePermissions(global, project, events.PermissionRules{})
	if diff := cmp.Diff(events.PermissionRules{Allow: []string{"Read"}, Deny: []string{"Bash"}}, got); diff != "" {
		t.Errorf("global+project (-want +got):\n%s", diff)
	}
	if got.Allows("Bash") || !got.Allows("Read") || got.Allows("Edit") {
		t.Errorf("project: Bash %v Read %v Edit %v; want denied, allowed, not allowed", got.Allows("Bash"), got.Allows("Read"), got.Allows("Edit"))
	}
	got = MergePermissions(global, project, events.PermissionRules{Allow: []string{"Edit"}})
	if diff := cmp.Diff(events.PermissionRules{Allow: []string{"Edit"}, Deny: []string{"Bash"}}, got); diff != "" {
		t.Errorf("with profile (-want +got):\n%s", diff)
	}
	if got.Allows("Bash") || got.Allows("Read") || !got.Allows("Edit") {
		t.Error("profile allow [Edit] must replace Read while Bash stays denied")
	}
}

func TestMergeAndNormalize(t *testing.T) {
	got := MergePermissions(events.PermissionRules{Allow: []string{"A"}, Deny: []string{"X", "mcp__github__*"}},
		events.PermissionRules{Deny: []string{"X", "Y"}}, events.PermissionRules{})
	if diff := cmp.Diff(events.PermissionRules{Allow: []string{"A"}, Deny: []string{"X", "mcp__github__*", "Y"}}, got); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
	if _, err := NormalizePatterns([]string{"a*b"}); err == nil {
		t.Error("inner * accepted")
	}
	if got, _ := NormalizePatterns([]string{" Read ", "Read", "", "Bash"}); !cmp.Equal(got, []string{"Read", "Bash"}) {
		t.Errorf("NormalizePatterns = %v", got)
	}
}

func TestArtifactFilter(t *testing.T) {
	onlySubagents := NewProfile("p", []events.ProfileItem{{Type: events.ArtifactSubagent, Ref: "tester"}})
	tests := []struct {
		name    string
		profile *Profile
		typ     string
		slug    string
		enabled bool
		want    bool
	}{
		{"no profile: enabled skill active", nil, events.ArtifactSkill, "a", true, true},
		{"no profile: disabled skill inactive", nil, events.ArtifactSkill, "a", false, false},
		// Scenario 91: a profile referencing only subagents leaves skills alone.
		{"profile without skills: enabled skill active", onlySubagents, events.ArtifactSkill, "a", true, true},
		{"profile without skills: disabled skill inactive", onlySubagents, events.ArtifactSkill, "a", false, false},
		{"referenced subagent active even disabled", onlySubagents, events.ArtifactSubagent, "tester", false, true},
		{"unreferenced subagent inactive even enabled", onlySubagents, events.ArtifactSubagent, "other", true, false},
	}
	for _, tt := range tests {
		if got := ArtifactFilter(tt.profile, tt.typ).Active(tt.slug, tt.enabled); got != tt.want {
			t.Errorf("%s: Active = %v, want %v", tt.name, got, tt.want)
		}
	}
	if ArtifactFilter(onlySubagents, events.ArtifactSkill) != nil {
		t.Error("a profile referencing no skills must leave skills unconstrained (nil filter)")
	}
}
