package acp

import (
	"strings"

	"clopen.dev/pkg/events"
)

// redacted replaces a secret in outputs, as Copilot CLI does in its own.
const redacted = "******"

// secrets are the credential values no output may carry: an agent may echo
// its environment, or a tool may print it. Short values are left alone
// (they would blank out ordinary words); the placeholders are not secret.
func secrets(c Credential) []string {
	if len(c.APIKey) < 8 || c.APIKey == PlaceholderKey || c.APIKey == CopilotPlaceholderKey {
		return nil
	}
	return []string{c.APIKey}
}

func redactText(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, redacted)
	}
	return s
}

// redact blanks the secrets out of every text an output carries. A secret
// split across two stream deltas is not caught in the deltas; the
// message that ends the stream carries the whole text and is.
func redact(o events.Output, secrets []string) events.Output {
	if len(secrets) == 0 {
		return o
	}
	r := func(s string) string { return redactText(s, secrets) }
	switch v := o.(type) {
	case events.StreamEvent:
		v.Text = r(v.Text)
		return v
	case events.ReasoningMessage:
		v.Text = r(v.Text)
		return v
	case events.AssistantMessage:
		v.Content = redactBlocks(v.Content, r)
		return v
	case events.UserMessage:
		v.Content = redactBlocks(v.Content, r)
		return v
	case events.Result:
		errs := make([]string, len(v.Errors))
		for i, e := range v.Errors {
			errs[i] = r(e)
		}
		if v.Errors != nil {
			v.Errors = errs
		}
		return v
	case events.Notification:
		v.Message = r(v.Message)
		return v
	}
	return o
}

func redactBlocks(blocks []events.Block, r func(string) string) []events.Block {
	out := make([]events.Block, len(blocks))
	for i, b := range blocks {
		switch b := b.(type) {
		case events.TextBlock:
			b.Text = r(b.Text)
			out[i] = b
		case events.ToolUseBlock:
			b.Input = []byte(r(string(b.Input)))
			out[i] = b
		case events.ToolResultBlock:
			b.Content = r(b.Content)
			out[i] = b
		default:
			out[i] = b
		}
	}
	return out
}
