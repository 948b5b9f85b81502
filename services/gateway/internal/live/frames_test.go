package live

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/jsonnul"
	"clopen.dev/services/gateway/internal/apierr"
)

func TestDecodeClientFrame(t *testing.T) {
	tests := []struct {
		give    string
		wantOp  string
		wantID  string
		wantErr bool
	}{
		{`{"op":"ping"}`, "ping", "", false},
		{`{"id":"1","op":"join","session":"s1","cursor":42}`, "join", "1", false},
		{`{"id":"1","op":"join","session":"s1","future":"field"}`, "join", "1", false},
		{`{"id":"2","op":"send","session":"s1","prompt":[{"type":"text","text":"hi"}]}`, "send", "2", false},
		{`{"id":"3","op":"answer","session":"s1","toolUseId":"t","answers":{"q":"a"}}`, "answer", "3", false},
		{`{"id":"4","op":"leave"}`, "", "4", true},
		{`{"id":"5","op":"cancel","session":""}`, "", "5", true},
		{`{"id":6,"op":"ping"}`, "", "", true},
		{`{"id":"7","op":"join","session":"s1","cursor":-1}`, "", "7", true},
		{`nul`, "", "", true},
		{`{"id":"8","op":"skills.available"}`, "skills.available", "8", false},
		{`{"id":"9","op":"skills.available","session":"s1","profileId":"pr1"}`, "skills.available", "9", false},
		{`{"id":"10","op":"skills.available","projectId":"p1"}`, "skills.available", "10", false},
		{`{"id":"11","op":"skills.available","session":"s1","projectId":"p1"}`, "", "11", true},
		{`{"id":"12","op":"skills.available","projectId":"p.*"}`, "", "12", true},
		{`{"id":"13","op":"skills.available","profileId":""}`, "skills.available", "13", false},
		{`{"id":"8","op":"models.list","engine":"scripted","accountId":"acc-1"}`, "models.list", "8", false},
		{`{"id":"9","op":"models.list"}`, "", "9", true},
		{`{"id":"10","op":"models.list","engine":"scripted","accountId":"a b"}`, "", "10", true},
		// Postgres cannot store NUL: refused in any string, the id still echoed.
		{`{"id":"14","op":"send","session":"s1","text":"a\u0000b"}`, "", "14", true},
		{`{"id":"15","op":"send","session":"s1","prompt":[{"type":"text","text":"\u0000"}]}`, "", "15", true},
		{`{"id":"16","op":"answer","session":"s1","toolUseId":"t","answers":{"q":"\u0000"}}`, "", "16", true},
		{`{"id":"17","op":"send","session":"s1","text":"a\\u0000b"}`, "send", "17", false},
	}
	for _, tt := range tests {
		f, err := DecodeClientFrame([]byte(tt.give))
		if (err != nil) != tt.wantErr || f.ID != tt.wantID || (!tt.wantErr && f.Op != tt.wantOp) {
			t.Errorf("DecodeClientFrame(%s) = %+v, %v; want op %q id %q err %v", tt.give, f, err, tt.wantOp, tt.wantID, tt.wantErr)
		}
		if err != nil && !errors.Is(err, apierr.ErrInvalid) {
			t.Errorf("DecodeClientFrame(%s) error %v is not classified invalid", tt.give, err)
		}
	}
}

// FuzzDecodeClientFrame feeds the decoder arbitrary bytes: it never panics,
// every refusal is classified invalid, and every frame it accepts is one the
// server can act on, holds no NUL and survives a round trip unchanged.
func FuzzDecodeClientFrame(f *testing.F) {
	for _, s := range []string{
		`{"op":"ping"}`,
		`{"id":"1","op":"join","session":"s1","cursor":42}`,
		`{"id":"2","op":"send","session":"s1","text":"hello","engine":"scripted","model":"scripted/hello"}`,
		`{"id":"3","op":"send","session":"s1","prompt":[{"type":"text","text":"hi"},{"type":"image","mediaType":"image/png","data":"AA=="}]}`,
		`{"id":"4","op":"answer","session":"s1","run":"r1","toolUseId":"toolu_1","decision":"deny","message":"no"}`,
		`{"id":"5","op":"cancel","session":"s1"}`,
		`{"id":"6","op":"interrupt","session":"s1","run":"r1"}`,
		`{"id":"7","op":"leave","session":"s1"}`,
		`{"id":"8","op":"join","session":"a.b"}`,
		`{"id":"9","op":"join","session":"s1","cursor":"x"}`,
		`{"id":"10","op":"skills.available","session":"s1","profileId":"pr1"}`,
		`{"id":"11","op":"skills.available","projectId":"p1"}`,
		`{"id":"12","op":"skills.available","projectId":"p1","session":"s1"}`,
		`{"id":"10","op":"models.list","engine":"claude-code","accountId":"acc-1"}`,
		`[]`, `null`, `{`, `"op"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeClientFrame(data)
		if err != nil {
			if !errors.Is(err, apierr.ErrInvalid) {
				t.Fatalf("refusal %v is not classified invalid", err)
			}
			if len(fr.ID) > maxFrameID {
				t.Fatalf("refusal echoes an id of %d bytes", len(fr.ID))
			}
			return
		}
		switch fr.Op {
		case events.WSOpPing:
		case events.WSOpSkillsAvailable:
			// Session and projectId are optional, but not both, and usable
			// as subject tokens when given.
			if fr.Session != "" && fr.ProjectID != "" {
				t.Fatalf("accepted skills.available with session %q and projectId %q", fr.Session, fr.ProjectID)
			}
			for _, id := range []string{fr.Session, fr.ProjectID, deref(fr.ProfileID)} {
				if id != "" && events.ValidToken(id) != nil {
					t.Fatalf("accepted skills.available naming %q", id)
				}
			}
		case events.WSOpModelsList:
			if !fr.Engine.Valid() || (fr.AccountID != "" && events.ValidToken(fr.AccountID) != nil) {
				t.Fatalf("accepted models.list of engine %q, account %q", fr.Engine, fr.AccountID)
			}
		default:
			if events.ValidToken(fr.Session) != nil {
				t.Fatalf("accepted op %s with session %q", fr.Op, fr.Session)
			}
		}
		if fr.Run != "" && events.ValidToken(fr.Run) != nil {
			t.Fatalf("accepted run %q", fr.Run)
		}
		again, err := json.Marshal(fr)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", fr, err)
		}
		if jsonnul.Check(again) != nil {
			t.Fatalf("accepted a frame holding NUL: %s", again)
		}
		fr2, err := DecodeClientFrame(again)
		if err != nil {
			t.Fatalf("round trip of %s refused: %v", again, err)
		}
		if !reflect.DeepEqual(normalise(fr), normalise(fr2)) {
			t.Fatalf("round trip changed the frame:\n%+v\n%+v", fr, fr2)
		}
	})
}

// normalise compacts the raw prompt so equal frames compare equal.
func normalise(f events.ClientFrame) events.ClientFrame {
	if len(f.Prompt) > 0 {
		var v any
		if json.Unmarshal(f.Prompt, &v) == nil {
			f.Prompt, _ = json.Marshal(v)
		}
	}
	if len(f.Answers) == 0 {
		f.Answers = nil
	}
	return f
}
