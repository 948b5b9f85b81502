package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/jsonnul"
	"clopen.dev/services/gateway/internal/apierr"
)

// maxFrameID bounds the id a client may choose; a longer one is not echoed.
const maxFrameID = 128

// DecodeClientFrame parses and checks one client frame: known op, the ids the
// op needs present and usable as subject tokens, prompt an array, answer
// complete, no string holding NUL (which Postgres cannot store). Fields the op does not use, and JSON keys this version does not
// know, are ignored. On error the returned frame still carries the id when
// one could be read, so the reply can echo it; the error is classified
// apierr.ErrInvalid.
func DecodeClientFrame(data []byte) (events.ClientFrame, error) {
	var f events.ClientFrame
	if err := json.Unmarshal(data, &f); err != nil {
		f = events.ClientFrame{ID: peekID(data)}
		return f, invalid("malformed frame: %s", jsonProblem(err))
	}
	if len(f.ID) > maxFrameID {
		f.ID = ""
		return f, invalid("id: at most %d bytes", maxFrameID)
	}
	if err := jsonnul.Check(data); err != nil {
		return f, invalid("%v", err)
	}
	return f, checkFrame(f)
}

func checkFrame(f events.ClientFrame) error {
	switch f.Op {
	case events.WSOpPing:
		return nil
	case events.WSOpSkillsAvailable:
		return checkPicker(f)
	case events.WSOpModelsList:
		return checkModels(f)
	case events.WSOpJoin, events.WSOpLeave, events.WSOpSend, events.WSOpCancel, events.WSOpInterrupt, events.WSOpAnswer:
	case "":
		return invalid("op: missing")
	default:
		return invalid("op: unknown op %q", f.Op)
	}
	if f.Session == "" {
		return invalid("session: missing")
	}
	if err := events.ValidToken(f.Session); err != nil {
		return invalid("session: %v", err)
	}
	if f.Run != "" {
		if err := events.ValidToken(f.Run); err != nil {
			return invalid("run: %v", err)
		}
	}
	switch f.Op {
	case events.WSOpSend:
		if len(f.Prompt) > 0 {
			if _, err := promptBlocks(f.Prompt); err != nil {
				return err
			}
		}
		if f.Text == "" && len(f.Prompt) == 0 {
			return invalid("send: give text or prompt")
		}
	case events.WSOpAnswer:
		if f.ToolUseID == "" {
			return invalid("toolUseId: missing")
		}
		if f.Decision != "" && f.Decision != events.DecisionAllow && f.Decision != events.DecisionDeny {
			return invalid("decision: want allow or deny, not %q", f.Decision)
		}
		if len(f.Answers) == 0 && f.Decision == "" {
			return invalid("answer: give answers or decision")
		}
	}
	return nil
}

// checkPicker checks skills.available: at most one of session and
// projectId, and every id given usable as a subject token.
func checkPicker(f events.ClientFrame) error {
	if f.Session != "" && f.ProjectID != "" {
		return invalid("skills.available: give session or projectId, not both")
	}
	for _, id := range []struct{ name, v string }{{"session", f.Session}, {"projectId", f.ProjectID}, {"profileId", deref(f.ProfileID)}} {
		if id.v == "" {
			continue
		}
		if err := events.ValidToken(id.v); err != nil {
			return invalid("%s: %v", id.name, err)
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// promptBlocks splits a frame's prompt into its blocks.
func promptBlocks(raw json.RawMessage) ([]json.RawMessage, error) {
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, invalid("prompt: want an array of content blocks")
	}
	return blocks, nil
}

// peekID reads the id of a frame that failed to decode as a whole, if its
// top level is still an object with a string id.
func peekID(data []byte) string {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	var id string
	if json.Unmarshal(v.ID, &id) != nil || len(id) > maxFrameID {
		return ""
	}
	return id
}

func jsonProblem(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Sprintf("field %q: want %s, got JSON %s", typ.Field, typ.Type, typ.Value)
	}
	return err.Error()
}

func invalid(format string, args ...any) error {
	return apierr.New(apierr.ErrInvalid, format, args...)
}

// eventFrame encodes an event frame around a stored chat event. Built by
// hand because it runs for every frame of every client, and encoding/json
// would re-validate and re-compact the event: streammgr wrote it compact,
// so a light check that it is one JSON object is enough.
func eventFrame(session string, cursor uint64, event []byte) ([]byte, bool) {
	if len(event) < 2 || event[0] != '{' || event[len(event)-1] != '}' {
		return nil, false
	}
	sess, err := json.Marshal(session)
	if err != nil {
		return nil, false
	}
	b := make([]byte, 0, len(event)+len(sess)+48)
	b = append(b, `{"type":"event","session":`...)
	b = append(b, sess...)
	b = append(b, `,"cursor":`...)
	b = strconv.AppendUint(b, cursor, 10)
	b = append(b, `,"event":`...)
	b = append(b, event...)
	return append(b, '}'), true
}
