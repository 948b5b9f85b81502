package events

import "testing"

func TestPermissionRulesAllows(t *testing.T) {
	tests := []struct {
		name string
		give PermissionRules
		tool string
		want bool
	}{
		{"no rules admit everything", PermissionRules{}, "Bash", true},
		{"an exact deny", PermissionRules{Deny: []string{"Bash"}}, "Bash", false},
		{"an exact deny is not a prefix", PermissionRules{Deny: []string{"Read"}}, "ReadFile", true},
		{"a prefix deny", PermissionRules{Deny: []string{"Web*"}}, "WebFetch", false},
		{"a prefix deny leaves others", PermissionRules{Deny: []string{"Web*"}}, "Write", true},
		{"an MCP server's tools", PermissionRules{Deny: []string{"mcp__github__*"}}, "mcp__github__create_issue", false},
		{"another MCP server", PermissionRules{Deny: []string{"mcp__github__*"}}, "mcp__linear__create_issue", true},
		{"an allow list admits what it matches", PermissionRules{Allow: []string{"Read", "Glob"}}, "Read", true},
		{"an allow list refuses the rest", PermissionRules{Allow: []string{"Read", "Glob"}}, "Bash", false},
		{"an allow prefix", PermissionRules{Allow: []string{"mcp__*"}}, "mcp__x", true},
		{"deny wins over allow", PermissionRules{Allow: []string{"Bash"}, Deny: []string{"Bash"}}, "Bash", false},
		{"deny everything", PermissionRules{Deny: []string{"*"}}, "Read", false},
		{"AskUserQuestion under deny *", PermissionRules{Deny: []string{"*"}}, "AskUserQuestion", true},
		{"AskUserQuestion denied by name", PermissionRules{Deny: []string{"AskUserQuestion", "Ask*"}}, "AskUserQuestion", true},
		{"AskUserQuestion outside an allow list", PermissionRules{Allow: []string{"Read"}}, "AskUserQuestion", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.give.Allows(tt.tool); got != tt.want {
				t.Errorf("%+v.Allows(%q) = %v, want %v", tt.give, tt.tool, got, tt.want)
			}
		})
	}
}

func TestPermissionRulesDeniesAll(t *testing.T) {
	tests := []struct {
		give   []string
		prefix string
		want   bool
	}{
		{nil, "mcp__s__", false},
		{[]string{"mcp__s__*"}, "mcp__s__", true},
		{[]string{"mcp__*"}, "mcp__s__", true},
		{[]string{"*"}, "mcp__s__", true},
		{[]string{"mcp__s__read"}, "mcp__s__", false}, // one tool, not all
		{[]string{"mcp__s__"}, "mcp__s__", false},     // an exact name
		{[]string{"mcp__so*"}, "mcp__s__", false},
		{[]string{"mcp__s__r*"}, "mcp__s__", false}, // some of its tools
	}
	for _, tt := range tests {
		if got := (PermissionRules{Deny: tt.give}).DeniesAll(tt.prefix); got != tt.want {
			t.Errorf("deny %v: DeniesAll(%q) = %v, want %v", tt.give, tt.prefix, got, tt.want)
		}
	}
}

func TestMatchTool(t *testing.T) {
	tests := []struct {
		pattern, tool string
		want          bool
	}{
		{"Read", "Read", true},
		{"Read", "ReadFile", false},
		{"Read*", "ReadFile", true},
		{"mcp__*", "mcp__x", true},
		{"*", "anything", true},
		{"Bash", "bash", false},
	}
	for _, tt := range tests {
		if got := MatchTool(tt.pattern, tt.tool); got != tt.want {
			t.Errorf("MatchTool(%q, %q) = %v, want %v", tt.pattern, tt.tool, got, tt.want)
		}
	}
}
