package claude

import (
	"slices"
	"testing"

	"clopen.dev/pkg/events"
)

func TestDisallowedFromPolicy(t *testing.T) {
	tests := []struct {
		name            string
		allowed, denied []string
		want, wantNot   []string
	}{
		{"nothing", nil, nil, nil, []string{"Bash"}},
		{"exact and canonical names", nil, []string{"Read", "Agent"}, []string{"Read", "Task"}, []string{"Bash"}},
		{"an MCP server's tools", nil, []string{"mcp__github__*"}, []string{"mcp__github"}, nil},
		{"a built-in prefix", nil, []string{"Web*"}, []string{"WebFetch", "WebSearch"}, []string{"Write"}},
		{"allow list denies the rest", []string{"Read", "Glob"}, nil, []string{"Bash", "Edit", "Write", "Grep"},
			[]string{"Read", "Glob", "AskUserQuestion"}},
		{"AskUserQuestion is never denied", nil, []string{"AskUserQuestion", "Ask*"}, nil, []string{"AskUserQuestion"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := disallowed(events.PermissionRules{Allow: tt.allowed, Deny: tt.denied})
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("disallowed(%v, %v) = %v, want it to contain %s", tt.allowed, tt.denied, got, w)
				}
			}
			for _, w := range tt.wantNot {
				if slices.Contains(got, w) {
					t.Errorf("disallowed(%v, %v) = %v, must not contain %s", tt.allowed, tt.denied, got, w)
				}
			}
		})
	}
	args, _ := cliArgs("m", LevelAuto, nil, events.PermissionRules{Deny: []string{"Bash", "Read"}})
	if i := slices.Index(args, "--disallowedTools"); i < 0 || args[i+1] != "Bash,Read" {
		t.Errorf("args = %v, want --disallowedTools Bash,Read", args)
	}
}
