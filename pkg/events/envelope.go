package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// Header names set on every message published to the EVENTS stream. The
// Clopen-* headers repeat the envelope's identity so that consumers can route
// and fence (drop an older epoch) without decoding the body.
const (
	HeaderRun         = "Clopen-Run"
	HeaderEpoch       = "Clopen-Epoch"
	HeaderSeq         = "Clopen-Seq"
	HeaderType        = "Clopen-Type" // the output's type
	HeaderTraceParent = "traceparent" // W3C trace context
	HeaderMsgID       = "Nats-Msg-Id" // JetStream de-duplication: Envelope.MsgID
)

// Envelope carries one engine output on ev.<tenant>.<run>:
// {"tenant","run","session","epoch","seq","emittedAt","traceparent","output"}
// with traceparent omitted when empty.
//
// The worker that owns the run stamps (Run, Epoch, Seq): Epoch is the
// revision of its run_owner lease (a fencing token: the stream manager drops
// events of an older epoch) and Seq counts the run's outputs densely from 1
// within an epoch. Together they identify the event; see MsgID.
type Envelope struct {
	Tenant      string
	Run         string
	Session     string // the chat session the run belongs to
	Epoch       uint64
	Seq         uint64
	EmittedAt   time.Time // when the worker published it; RFC 3339 UTC on the wire
	TraceParent string
	Output      Output
}

// MsgID returns "<run>:<epoch>:<seq>", the Nats-Msg-Id under which the event
// is published, so that JetStream drops a repeated publish.
func (e Envelope) MsgID() string {
	return e.Run + ":" + strconv.FormatUint(e.Epoch, 10) + ":" + strconv.FormatUint(e.Seq, 10)
}

// Source returns the envelope's identity as the chat events routed from it
// carry it.
func (e Envelope) Source() SourceRef { return SourceRef{Run: e.Run, Epoch: e.Epoch, Seq: e.Seq} }

// Validate reports whether the envelope can be published: Tenant, Run and
// Session are valid subject tokens (see ValidToken), Seq is not zero and
// there is an Output.
func (e Envelope) Validate() error {
	for _, f := range []struct{ name, v string }{{"tenant", e.Tenant}, {"run", e.Run}, {"session", e.Session}} {
		if err := ValidToken(f.v); err != nil {
			return fmt.Errorf("validate envelope: %s: %w", f.name, err)
		}
	}
	switch {
	case e.Seq == 0:
		return errors.New("validate envelope: seq: zero")
	case isNil(e.Output):
		return errors.New("validate envelope: output: missing")
	}
	return nil
}

// LogValue implements slog.LogValuer. It logs the event's identity and type,
// never its content (prompts, code and tool output stay out of logs).
func (e Envelope) LogValue() slog.Value {
	typ := ""
	if !isNil(e.Output) {
		typ = e.Output.OutputType()
	}
	return slog.GroupValue(
		slog.String("tenant", e.Tenant),
		slog.String("run", e.Run),
		slog.Uint64("epoch", e.Epoch),
		slog.Uint64("seq", e.Seq),
		slog.String("event_type", typ),
	)
}

// MarshalJSON implements json.Marshaler; the output is encoded with
// EncodeOutput.
func (e Envelope) MarshalJSON() ([]byte, error) {
	out, err := EncodeOutput(e.Output)
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	at, err := wireTime("emittedAt", e.EmittedAt)
	if err != nil {
		return nil, fmt.Errorf("encode envelope: %w", err)
	}
	// Built by hand: this is the hot path of every published event, and
	// encoding/json would validate and re-compact the already encoded output.
	b := make([]byte, 0, len(out)+192)
	b = append(b, '{')
	b = appendField(b, true, "tenant", e.Tenant)
	b = appendField(b, false, "run", e.Run)
	b = appendField(b, false, "session", e.Session)
	b = append(b, `,"epoch":`...)
	b = strconv.AppendUint(b, e.Epoch, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = appendField(b, false, "emittedAt", at)
	if e.TraceParent != "" {
		b = appendField(b, false, "traceparent", e.TraceParent)
	}
	b = append(b, `,"output":`...)
	b = append(b, out...)
	return append(b, '}'), nil
}

// UnmarshalJSON decodes strictly, as DecodeEnvelope does.
func (e *Envelope) UnmarshalJSON(data []byte) error {
	v, err := DecodeEnvelope(data)
	if err == nil {
		*e = v
	}
	return err
}

// DecodeEnvelope decodes an envelope, its output through the Output decoder
// (an unknown output type becomes Unknown). A missing output is an error;
// every refusal is a *DecodeError of Type "envelope" whose Field starts at the
// envelope, e.g. "output.content[0].input".
func DecodeEnvelope(data []byte) (Envelope, error) {
	e, _, err := DecodeEnvelopeRaw(data)
	return e, err
}

// DecodeEnvelopeRaw is DecodeEnvelope that also returns the output's JSON as
// it arrived, so a consumer that stores it need not encode it again.
func DecodeEnvelopeRaw(data []byte) (Envelope, json.RawMessage, error) {
	var err error
	var output json.RawMessage
	d := openObject(data, "", &err)
	e := Envelope{
		Tenant:      d.str("tenant"),
		Run:         d.str("run"),
		Session:     d.str("session"),
		Epoch:       d.uint64("epoch"),
		Seq:         d.uint64("seq"),
		EmittedAt:   d.time("emittedAt"),
		TraceParent: d.str("traceparent"),
	}
	if raw := d.typed("output", "object", "a JSON object"); raw != nil {
		e.Output = decodeOutput(d.child("output", raw))
		output = raw
	} else if !d.failed() {
		d.failf("output", "missing")
	}
	if err != nil {
		return Envelope{}, nil, withType(err, "envelope")
	}
	return e, output, nil
}
