package worker

import "strings"

// Policy is a run's tool permission policy: denies win; a non-empty allow
// list admits only what it matches; patterns are exact names or end in one *.
type Policy struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Verdicts of Policy.Decide.
const (
	PolicyAllow = "allow"
	PolicyDeny  = "deny"
)

// Decide returns PolicyDeny or PolicyAllow for a canonical tool name.
// AskUserQuestion is never blocked: it is how the agent talks to the user.
func (p Policy) Decide(tool string) string {
	if tool == "AskUserQuestion" {
		return PolicyAllow
	}
	for _, pat := range p.Deny {
		if matches(pat, tool) {
			return PolicyDeny
		}
	}
	if len(p.Allow) == 0 {
		return PolicyAllow
	}
	for _, pat := range p.Allow {
		if matches(pat, tool) {
			return PolicyAllow
		}
	}
	return PolicyDeny
}

func matches(pattern, tool string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(tool, prefix)
	}
	return pattern == tool
}
