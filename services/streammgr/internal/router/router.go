// Package router turns a run's engine events into what streammgr does with
// them: chat events for clients, message rows for the session's DAG, and
// changes to the run and session rows. It is pure: no I/O, no clock but the
// envelope's. One State per run, fed that run's envelopes in stream order.
//
// Replaying the same envelopes into a State rebuilt from the committed
// projections yields the same row ids and chat event ids, so a redelivery
// after a crash lands on the same rows and JetStream drops the repeated chat
// events.
package router

import (
	"strings"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
)

// Run is what the router knows about a run before its events.
type Run struct {
	ID, Tenant, SessionID, ProjectID string
	Engine                           events.EngineType
	Provider, ModelName              string
	AccountID, AccountName, Effort   string
	SenderID, SenderName             string
	State                            events.RunStateName
	Epoch, LastSeq                   uint64 // highest seq already routed in Epoch
	// Head is the session's DAG head row id when the router picks the run up.
	Head string
	// EngineSessionKnown is true once the run's engine session id is recorded.
	EngineSessionKnown bool
}

// State is the router's memory of one run.
type State struct {
	run Run

	partial *Partial // what streamed since the last saved message

	lastText        string // text of the previous consecutive assistant message (dedupe)
	lastIsAssistant bool
	lastAssistant   *saved // newest saved assistant message of this run

	openTools map[string]*saved // tool_use id -> the assistant message holding it, until its result
	noUsage   []*saved          // saved assistant messages whose usage is still null
	result    *events.Result    // the engine's last result
}

type saved struct {
	rowID string
	msg   events.AssistantMessage
}

// New returns the state of run, picked up at the point r describes. What
// already streamed but is not yet saved is given by the caller when it
// rebuilds a state after a restart (see Partial.Fold); nil is nothing.
func New(r Run, p *Partial) *State {
	if p == nil {
		p = &Partial{}
	}
	return &State{run: r, partial: p, openTools: map[string]*saved{}}
}

// Run returns what the state knows about its run now.
func (s *State) Run() Run { return s.run }

// Partial returns the text and reasoning streamed since the last saved message.
func (s *State) Partial() (text, reasoning string) { return s.partial.Text(), s.partial.Reasoning() }

// Partial is what a run streamed since its last saved message: the text,
// the reasoning, and which of the two streams is open (started and not yet
// stopped), so that the end of the run can close it for clients.
type Partial struct {
	text, reasoning         strings.Builder
	textOpen, reasoningOpen bool
}

// Fold applies one of the run's outputs: stream events build the partial
// text, a saved message clears it. Replaying a run's stored events through
// Fold rebuilds the Partial its State had.
func (p *Partial) Fold(o events.Output) {
	switch v := o.(type) {
	case events.StreamEvent:
		buf, open := &p.text, &p.textOpen
		if v.Reasoning {
			buf, open = &p.reasoning, &p.reasoningOpen
		}
		switch v.Event {
		case events.StreamStart:
			buf.Reset()
			*open = true
		case events.StreamDelta:
			buf.WriteString(v.Text)
		case events.StreamStop:
			*open = false
			if v.Reasoning {
				p.reasoning.Reset() // reasoning is saved as a message of its own
			}
		}
	case events.ReasoningMessage:
		p.reasoning.Reset()
	case events.AssistantMessage:
		p.text.Reset()
	}
}

// Text is the text streamed since the last saved assistant message.
func (p *Partial) Text() string { return p.text.String() }

// Reasoning is the reasoning streamed since the last saved one.
func (p *Partial) Reasoning() string { return p.reasoning.String() }

// Open reports which streams have started and not yet stopped.
func (p *Partial) Open() (text, reasoning bool) { return p.textOpen, p.reasoningOpen }

// RowID derives the message row id of the n-th message produced from one
// engine event, so a replay lands on the same row.
func RowID(run string, epoch, seq uint64, n int) string {
	return uuid.NewSHA1(rowNamespace, []byte(run+":"+itoa(epoch)+":"+itoa(seq)+":"+itoa(uint64(n)))).String()
}

var rowNamespace = uuid.MustParse("6f1d5b8e-3c1a-4c52-9d0e-9f6a1c2b7e41")

// Message is a row to insert into the session's DAG.
type Message struct {
	RowID, ParentRowID string
	Output             events.Output // a persisted type
	CreatedAt          time.Time
}

// Update rewrites a saved message in place (stop reason, usage backfill).
type Update struct {
	RowID  string
	Output events.Output
}

// RunChange is what changes on the run row.
type RunChange struct {
	State         events.RunStateName // "" = unchanged
	Epoch         uint64              // the epoch this event belongs to
	LastSeq       uint64
	Claimed       bool
	WorkerID      string
	FirstOutput   bool
	EngineSession string
	Usage         *events.TokenUsage
	// MeteredUsage is what the worker's model proxy counted for the run
	// (reported with the terminal state).
	MeteredUsage *events.TokenUsage
	// Live is the run's newest running count (a usage event), which budgets
	// read until the terminal state brings the final numbers.
	Live *events.RunUsage
	// Snapshot is the state the run left (reported with the terminal state).
	Snapshot  *events.RunSnapshot
	CostUSD   *float64
	NumTurns  *int
	Error     string
	ErrorKind events.ErrorKind
	// ArtifactRevision is the artifacts revision the worker configured the
	// run from (reported with the running state).
	ArtifactRevision int64
	// Effort is the reasoning effort the engine runs with, as the worker
	// clamped it ("" for none); nil leaves the requested one.
	Effort *string
}

// SessionChange is what changes on the session row.
type SessionChange struct {
	Head          string // new DAG head row id
	HeadSessionID string
	Summary       *string
	AddMessages   int
	LastMessageAt *time.Time
	ClearActive   bool // the run ended: the session may start its next queued run
}

// RateLimit is the latest rate-limit report of an engine account.
type RateLimit struct {
	Engine    events.EngineType
	AccountID string
	Data      events.ChatRateLimit
}

// Outcome is what routing one envelope produced. Key is the event's place in
// the log; Store false means the envelope is dropped (DropReason says why).
type Outcome struct {
	Epoch, Seq uint64
	At         time.Time // when the worker emitted the event
	Store      bool
	DropReason string
	Chat       []events.ChatEvent // to chat.<tenant>.<session>, in order
	Notify     []events.ChatEvent // to notify.<tenant>.<project>
	Inserts    []Message
	Updates    []Update
	Run        RunChange
	Session    SessionChange
	RateLimit  *RateLimit
	Terminal   events.RunStateName // set when this event ended the run
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
