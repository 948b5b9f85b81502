package events

// StreamEvent is a transient streaming frame:
// {"type":"stream_event","event","sessionId","text","reasoning"}. "start" and
// "stop" bracket one text or reasoning stream and carry no text; "delta"
// carries the next piece of it (a delta, never the text so far). Text and
// reasoning streams never overlap: an adapter stops one before starting the
// other.
type StreamEvent struct {
	Event     StreamEventKind
	SessionID string
	Text      string // delta only; ignored for start and stop
	Reasoning bool   // the stream is reasoning, not answer text
}

// StreamEventKind is the "event" of a StreamEvent.
type StreamEventKind string

// The stream event kinds.
const (
	StreamStart StreamEventKind = "start"
	StreamStop  StreamEventKind = "stop"
	StreamDelta StreamEventKind = "delta"
)

// Valid reports whether k is start, stop or delta.
func (k StreamEventKind) Valid() bool {
	return oneOf(k, []StreamEventKind{StreamStart, StreamStop, StreamDelta})
}

// OutputType implements Output.
func (StreamEvent) OutputType() string { return TypeStreamEvent }

func (e StreamEvent) sessionID() string { return e.SessionID }

// MarshalJSON implements json.Marshaler; "text" is present for deltas only.
func (e StreamEvent) MarshalJSON() ([]byte, error) {
	if err := checkEnum("event", e.Event, true); err != nil {
		return nil, encodeErr(TypeStreamEvent, err)
	}
	var text *string
	if e.Event == StreamDelta {
		text = &e.Text
	}
	return marshal(struct {
		Type      string          `json:"type"`
		Event     StreamEventKind `json:"event"`
		SessionID string          `json:"sessionId"`
		Text      *string         `json:"text,omitempty"`
		Reasoning bool            `json:"reasoning"`
	}{TypeStreamEvent, e.Event, e.SessionID, text, e.Reasoning})
}

// UnmarshalJSON decodes a stream event strictly, as DecodeOutput does.
func (e *StreamEvent) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, e) }

func decodeStreamEvent(d *dec) Output {
	e := StreamEvent{
		Event:     readEnum[StreamEventKind](d, "event", true),
		SessionID: d.str("sessionId"),
		Reasoning: d.boolean("reasoning"),
	}
	if e.Event == StreamDelta {
		e.Text = d.str("text")
	}
	return e
}

// Result ends an engine turn: {"type":"result","subtype","sessionId", ...}.
// A success carries "numTurns","totalCostUsd","usage","stopReason" (an empty
// StopReason is null; it is the engine's own word, not a StopReason); an
// error subtype carries "errors" instead. Only the fields of Subtype are
// encoded or decoded.
type Result struct {
	Subtype      ResultSubtype
	SessionID    string
	NumTurns     int
	TotalCostUSD float64
	Usage        TokenUsage
	StopReason   string
	Errors       []string // error subtypes; nil encodes as []
}

// ResultSubtype says how a turn ended.
type ResultSubtype string

// The result subtypes. Claude's error_max_budget_usd maps to
// ResultErrorMaxBudget; any other unknown engine failure to
// ResultErrorDuringExecution.
const (
	ResultSuccess              ResultSubtype = "success"
	ResultErrorMaxTurns        ResultSubtype = "error_max_turns"
	ResultErrorDuringExecution ResultSubtype = "error_during_execution"
	ResultErrorMaxBudget       ResultSubtype = "error_max_budget"
)

// Valid reports whether s is one of the result subtypes.
func (s ResultSubtype) Valid() bool {
	return oneOf(s, []ResultSubtype{ResultSuccess, ResultErrorMaxTurns, ResultErrorDuringExecution, ResultErrorMaxBudget})
}

// IsError reports whether the turn ended in one of the error subtypes.
func (r Result) IsError() bool { return r.Subtype != ResultSuccess }

// OutputType implements Output.
func (Result) OutputType() string { return TypeResult }

func (r Result) sessionID() string { return r.SessionID }

// MarshalJSON implements json.Marshaler.
func (r Result) MarshalJSON() ([]byte, error) {
	if err := checkEnum("subtype", r.Subtype, true); err != nil {
		return nil, encodeErr(TypeResult, err)
	}
	if r.Subtype == ResultSuccess {
		return marshal(struct {
			Type         string        `json:"type"`
			Subtype      ResultSubtype `json:"subtype"`
			SessionID    string        `json:"sessionId"`
			NumTurns     int           `json:"numTurns"`
			TotalCostUSD float64       `json:"totalCostUsd"`
			Usage        TokenUsage    `json:"usage"`
			StopReason   *string       `json:"stopReason"`
		}{TypeResult, r.Subtype, r.SessionID, r.NumTurns, r.TotalCostUSD, r.Usage, nullable(r.StopReason)})
	}
	errs := r.Errors
	if errs == nil {
		errs = []string{}
	}
	return marshal(struct {
		Type      string        `json:"type"`
		Subtype   ResultSubtype `json:"subtype"`
		SessionID string        `json:"sessionId"`
		Errors    []string      `json:"errors"`
	}{TypeResult, r.Subtype, r.SessionID, errs})
}

// UnmarshalJSON decodes a result strictly, as DecodeOutput does.
func (r *Result) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, r) }

func decodeResult(d *dec) Output {
	r := Result{Subtype: readEnum[ResultSubtype](d, "subtype", true), SessionID: d.str("sessionId")}
	if r.Subtype != ResultSuccess {
		r.Errors = d.strs("errors")
		return r
	}
	r.NumTurns = d.int("numTurns")
	r.TotalCostUSD = d.float("totalCostUsd")
	if u := decodeUsage(d, "usage"); u != nil {
		r.Usage = *u
	}
	r.StopReason = d.str("stopReason")
	return r
}
