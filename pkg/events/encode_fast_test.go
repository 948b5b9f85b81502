package events

import (
	"encoding/json"
	"testing"
	"time"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quo"te`, `back\slash`, "tab\tnew\nline", "\x00\x1f", "é ü 中文", "<html>&", "\u2028\u2029", "emoji 🎉", "\xff invalid"} {
		got := string(appendString(nil, s))
		want, _ := marshal(s)
		if got != string(want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("appendString(%q) = %s is not valid JSON: %v", s, got, err)
		}
	}
}

func TestEnvelopeWithAwkwardStringsRoundTrips(t *testing.T) {
	env := Envelope{Tenant: "t", Run: "r", Session: "s", Epoch: 2, Seq: 9, EmittedAt: time.Unix(1, 5).UTC(),
		TraceParent: "00-abc", Output: StreamEvent{Event: StreamDelta, SessionID: `s"1`, Text: "a\n\"b\" <c> ü"}}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if back.Output.(StreamEvent).Text != "a\n\"b\" <c> ü" || back.Seq != 9 || back.TraceParent != "00-abc" {
		t.Errorf("round trip = %+v", back)
	}
}
