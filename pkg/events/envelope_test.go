package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

func TestEnvelopeIdentity(t *testing.T) {
	e := goldenEnvelope
	if got, want := e.MsgID(), "run-1:2:17"; got != want {
		t.Errorf("MsgID() = %q, want %q", got, want)
	}
	if got, want := e.Source(), (SourceRef{Run: "run-1", Epoch: 2, Seq: 17}); got != want {
		t.Errorf("Source() = %+v, want %+v", got, want)
	}
	headers := map[string]string{
		HeaderRun: "Clopen-Run", HeaderEpoch: "Clopen-Epoch", HeaderSeq: "Clopen-Seq", HeaderType: "Clopen-Type",
		HeaderTraceParent: "traceparent", HeaderMsgID: "Nats-Msg-Id",
	}
	for got, want := range headers {
		if got != want {
			t.Errorf("header constant %q, want %q", got, want)
		}
	}
}

func TestEnvelopeValidate(t *testing.T) {
	ok := goldenEnvelope
	tests := []struct {
		name string
		give func(e *Envelope)
		want string // "" for valid
	}{
		{"valid", func(*Envelope) {}, ""},
		{"zero epoch is allowed", func(e *Envelope) { e.Epoch = 0 }, ""},
		{"no tenant", func(e *Envelope) { e.Tenant = "" }, "tenant"},
		{"run with a dot", func(e *Envelope) { e.Run = "a.b" }, "run"},
		{"session wildcard", func(e *Envelope) { e.Session = "*" }, "session"},
		{"zero seq", func(e *Envelope) { e.Seq = 0 }, "seq: zero"},
		{"no output", func(e *Envelope) { e.Output = nil }, "output: missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ok
			tt.give(&e)
			err := e.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error about %s", err, tt.want)
			}
		})
	}
	e := ok
	e.Tenant = "a b"
	if err := e.Validate(); !errors.Is(err, ErrBadToken) {
		t.Errorf("Validate() = %v, want it to wrap ErrBadToken", err)
	}
}

func TestEnvelopeLogValue(t *testing.T) {
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("published", "event", goldenEnvelope)
	var line struct {
		Event map[string]any `json:"event"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log line %s: %v", buf.Bytes(), err)
	}
	want := map[string]any{"tenant": "tenant-1", "run": "run-1", "epoch": 2.0, "seq": 17.0, "event_type": "assistant"}
	if !reflect.DeepEqual(line.Event, want) {
		t.Errorf("logged %v, want %v", line.Event, want)
	}
	if bytes.Contains(buf.Bytes(), []byte("Running the tests")) {
		t.Errorf("the log line carries the output's content: %s", buf.Bytes())
	}
	if v := (Envelope{}).LogValue(); v.Kind() != slog.KindGroup {
		t.Errorf("LogValue of an empty envelope is %v, want a group", v.Kind())
	}
}

func TestEnvelopeJSON(t *testing.T) {
	b, err := json.Marshal(goldenEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	var back Envelope
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.MsgID() != goldenEnvelope.MsgID() || back.Output.OutputType() != TypeAssistant {
		t.Errorf("json round trip = %+v, want the golden envelope", back)
	}
	noTrace := goldenEnvelope
	noTrace.TraceParent = ""
	if b, _ := noTrace.MarshalJSON(); bytes.Contains(b, []byte("traceparent")) {
		t.Errorf("an empty traceparent was encoded: %s", b)
	}
}

func TestChatEventMsgID(t *testing.T) {
	ev := goldenChats["message"]
	for n, want := range []string{"run-1:2:17:0", "run-1:2:17:1"} {
		if got := ev.MsgID(n); got != want {
			t.Errorf("MsgID(%d) = %q, want %q", n, got, want)
		}
	}
	if got := goldenChats["messages_changed"].MsgID(0); got != "" {
		t.Errorf("MsgID without a source = %q, want empty", got)
	}
}

func TestChatEventValidate(t *testing.T) {
	tests := []struct {
		name string
		give func(ev *ChatEvent)
		want string
	}{
		{"valid", func(*ChatEvent) {}, ""},
		{"no source", func(ev *ChatEvent) { ev.Source = nil }, ""},
		{"unknown type with its data", func(ev *ChatEvent) { ev.Type, ev.Data = "chat:later", ChatUnknown{Type: "chat:later"} }, ""},
		{"no type", func(ev *ChatEvent) { ev.Type = "" }, "type: missing"},
		{"no data", func(ev *ChatEvent) { ev.Data = nil }, "data: missing"},
		{"data of another type", func(ev *ChatEvent) { ev.Data = ChatCancelled{} }, "chat:cancelled payload"},
		{"bad session", func(ev *ChatEvent) { ev.ChatSessionID = "a.b" }, "chatSessionId"},
		{"bad source run", func(ev *ChatEvent) { ev.Source = &SourceRef{Seq: 1} }, "source.run"},
		{"zero source seq", func(ev *ChatEvent) { ev.Source = &SourceRef{Run: "r"} }, "source.seq: zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := goldenChats["partial_update"]
			tt.give(&ev)
			err := ev.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error about %s", err, tt.want)
			}
		})
	}
}

func TestChatDataJSON(t *testing.T) {
	// Each payload type decodes on its own through json.Unmarshal, strictly.
	for _, name := range sortedKeys(goldenChats) {
		ev := goldenChats[name]
		if _, unknown := ev.Data.(ChatUnknown); unknown {
			continue
		}
		b, err := ev.Data.MarshalJSON() // json.Marshal would escape the raw tool input's "&"
		if err != nil {
			t.Fatalf("%s: MarshalJSON: %v", name, err)
		}
		ptr := reflect.New(reflect.TypeOf(ev.Data))
		if err := json.Unmarshal(b, ptr.Interface()); err != nil {
			t.Errorf("%s: json.Unmarshal: %v", name, err)
			continue
		}
		if got := ptr.Elem().Interface(); !reflect.DeepEqual(got, ev.Data) {
			t.Errorf("%s: json round trip = %#v, want %#v", name, got, ev.Data)
		}
	}
	var p ChatPartial
	var de *DecodeError
	if err := json.Unmarshal([]byte(`{"eventType":"middle"}`), &p); !errors.As(err, &de) || de.Field != "eventType" {
		t.Errorf("json.Unmarshal(bad partial) = %v, want a *DecodeError on eventType", err)
	}
}
