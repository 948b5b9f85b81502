package chats

import (
	"encoding/json"
	"unicode/utf8"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
)

// Turn is a validated request to start a turn: the caller is filled in by
// Send.
type Turn struct {
	events.StartTurnRequest
}

// NewTurn validates a send of either text or prompt blocks (exactly one) for
// session. The prompt's text may hold at most maxText bytes
// (apierr.ErrTooLarge beyond).
func NewTurn(session string, in api.SendMessage, maxText int) (Turn, error) {
	prompt, err := Prompt(in.Text, in.Prompt, maxText)
	if err != nil {
		return Turn{}, err
	}
	if err := checkEngine(in.Engine); err != nil {
		return Turn{}, err
	}
	if in.ParentMessageID != "" {
		if err := checkID("message", in.ParentMessageID); err != nil {
			return Turn{}, err
		}
	}
	if len(in.ClientRequestID) > 128 {
		return Turn{}, apierr.New(apierr.ErrInvalid, "clientRequestId: at most 128 bytes")
	}
	return Turn{events.StartTurnRequest{SessionID: session, Prompt: prompt, Engine: in.Engine, Model: in.Model,
		Effort: in.Effort, ProfileID: in.ProfileID, ClientRequestID: in.ClientRequestID, ParentMessageID: in.ParentMessageID}}, nil
}

// Prompt builds the content blocks of a send: text is shorthand for one
// text block; raw holds blocks as the client sent them. Only text, image and
// document blocks may be sent.
func Prompt(text string, raw []json.RawMessage, maxText int) ([]events.Block, error) {
	switch {
	case text != "" && len(raw) > 0:
		return nil, apierr.New(apierr.ErrInvalid, "give text or prompt, not both")
	case text == "" && len(raw) == 0:
		return nil, apierr.New(apierr.ErrInvalid, "prompt: empty; give text or prompt blocks")
	case text != "":
		if err := checkText(len(text), maxText); err != nil {
			return nil, err
		}
		if !utf8.ValidString(text) {
			return nil, apierr.New(apierr.ErrInvalid, "text: not valid UTF-8")
		}
		return []events.Block{events.TextBlock{Text: text}}, nil
	}
	blocks := make([]events.Block, 0, len(raw))
	size := 0
	for i, r := range raw {
		b, err := events.DecodeBlock(r)
		if err != nil {
			return nil, apierr.New(apierr.ErrInvalid, "prompt[%d]: %v", i, err)
		}
		switch b := b.(type) {
		case events.TextBlock:
			size += len(b.Text)
		case events.ImageBlock, events.DocumentBlock:
		default:
			return nil, apierr.New(apierr.ErrInvalid, "prompt[%d]: a %s block cannot be sent", i, b.BlockType())
		}
		blocks = append(blocks, b)
	}
	if err := checkText(size, maxText); err != nil {
		return nil, err
	}
	return blocks, nil
}

func checkText(n, max int) error {
	if max > 0 && n > max {
		return apierr.New(apierr.ErrTooLarge, "prompt text is %d bytes, the limit is %d", n, max)
	}
	return nil
}

func checkEngine(e events.EngineType) error {
	if e != "" && !e.Valid() {
		return apierr.New(apierr.ErrInvalid, "engine: unknown engine %q", e)
	}
	return nil
}

func checkAnswer(a api.Answer) error {
	switch {
	case a.ToolUseID == "" || len(a.ToolUseID) > 256:
		return apierr.New(apierr.ErrInvalid, "toolUseId: required, at most 256 bytes")
	case a.RunID != "" && events.ValidToken(a.RunID) != nil:
		return apierr.New(apierr.ErrInvalid, "runId: %q is not a run id", a.RunID)
	case len(a.Answers) == 0 && a.Decision == "":
		return apierr.New(apierr.ErrInvalid, "give answers (a question) or decision (a permission prompt)")
	case len(a.Answers) > 0 && a.Decision != "":
		return apierr.New(apierr.ErrInvalid, "give answers or decision, not both")
	case a.Decision != "" && a.Decision != events.DecisionAllow && a.Decision != events.DecisionDeny:
		return apierr.New(apierr.ErrInvalid, "decision: want allow or deny, not %q", a.Decision)
	}
	return nil
}
