package enginetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Recorder collects a run's outputs and plays the user: it is the run's
// Emit and its Interaction. Permission prompts are decided by Decide (allow
// all when nil); questions are answered with Answers. It is safe for
// concurrent use.
type Recorder struct {
	// Decide answers permission prompts; nil allows every call.
	Decide func(engine.PermissionRequest) engine.Decision
	// Answers answers every question (question text to label).
	Answers map[string]string
	// AnswerAtOnce answers each question inside Emit, the moment its
	// tool_use goes out (when a client is told it may answer), through the
	// worker's engine.Questions, before the agent has asked for it.
	AnswerAtOnce bool

	questions engine.Questions
	early     []string // tool use ids answered at once
	refused   []error  // answers given at once and refused

	mu        sync.Mutex
	outs      []events.Output
	permits   []engine.PermissionRequest
	asked     []string // tool use ids of the questions asked
	askedSeen []bool   // whether the question's tool_use was emitted first
	started   time.Time
	firstText time.Duration
	firstAt   time.Time
	delta     chan struct{} // closed at the first text delta
}

var _ engine.Interaction = (*Recorder)(nil)

// NewRecorder returns a recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{delta: make(chan struct{}), started: time.Now()} }

// Emit implements engine.Emit.
func (r *Recorder) Emit(o events.Output) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outs = append(r.outs, o)
	if r.AnswerAtOnce {
		r.answerAtOnce(o)
	}
	if se, ok := o.(events.StreamEvent); ok && se.Event == events.StreamDelta && !se.Reasoning && r.firstText == 0 {
		r.firstAt = time.Now()
		r.firstText = r.firstAt.Sub(r.started)
		close(r.delta)
	}
	return nil
}

// FirstDelta is closed once the first text delta has been emitted.
func (r *Recorder) FirstDelta() <-chan struct{} { return r.delta }

// TimeToFirstText is how long after NewRecorder the first text delta came;
// zero if none did.
func (r *Recorder) TimeToFirstText() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstText
}

// FirstTextAt is when the first text delta was emitted; zero if none was.
func (r *Recorder) FirstTextAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstAt
}

// Outputs returns a copy of the outputs so far.
func (r *Recorder) Outputs() []events.Output {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.Output(nil), r.outs...)
}

// Permits returns the permission prompts so far.
func (r *Recorder) Permits() []engine.PermissionRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]engine.PermissionRequest(nil), r.permits...)
}

// Permit implements engine.Interaction.
func (r *Recorder) Permit(_ context.Context, p engine.PermissionRequest) (engine.Decision, error) {
	r.mu.Lock()
	r.permits = append(r.permits, p)
	decide := r.Decide
	r.mu.Unlock()
	if decide == nil {
		return engine.Decision{Allow: true}, nil
	}
	return decide(p), nil
}

// answerAtOnce answers the questions o asks that were not answered yet,
// as a client does on chat:waiting-input; r.mu is held.
func (r *Recorder) answerAtOnce(o events.Output) {
	r.questions.Saw(o)
	id, name := toolUse(o)
	if name != string(events.ToolAskUserQuestion) || slices.Contains(r.early, id) {
		return
	}
	r.early = append(r.early, id)
	if err := r.questions.Answer(id, engine.Reply{Answers: r.Answers}); err != nil {
		r.refused = append(r.refused, err)
	}
}

// Refused returns the errors of answers given at once that were refused.
func (r *Recorder) Refused() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.refused...)
}

// AnsweredAtOnce returns the tool use ids of the questions answered at once.
func (r *Recorder) AnsweredAtOnce() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.early...)
}

// AskUser implements engine.Interaction. It records whether the question's
// tool_use went out before it was asked, as the contract demands. With
// AnswerAtOnce it parks the question; an answer refused earlier is given
// again once the question is parked, as a client retrying would, so the turn
// still ends and Refused tells what went wrong.
func (r *Recorder) AskUser(ctx context.Context, toolUseID string, q events.AskUserQuestionInput) (map[string]string, error) {
	r.mu.Lock()
	seen := false
	for _, o := range r.outs {
		if id, _ := toolUse(o); id == toolUseID {
			seen = true
		}
	}
	r.asked = append(r.asked, toolUseID)
	r.askedSeen = append(r.askedSeen, seen)
	atOnce, answers := r.AnswerAtOnce, r.Answers
	r.mu.Unlock()
	if len(q.Questions) == 0 {
		return nil, fmt.Errorf("question %s has no questions", toolUseID)
	}
	if !atOnce {
		return answers, nil
	}
	reply, err := r.questions.Park(ctx, toolUseID, false, func() error {
		_ = r.questions.Answer(toolUseID, engine.Reply{Answers: answers}) // already answered: kept as it was
		return nil
	})
	return reply.Answers, err
}

// toolUse returns the id and name of the tool_use an output carries.
func toolUse(o events.Output) (id, name string) {
	a, ok := o.(events.AssistantMessage)
	if !ok {
		return "", ""
	}
	for _, b := range a.Content {
		if tu, ok := b.(events.ToolUseBlock); ok {
			return tu.ID, tu.Name
		}
	}
	return "", ""
}

// DenyAll is a Decide that refuses every tool call.
func DenyAll(engine.PermissionRequest) engine.Decision {
	return engine.Decision{Allow: false, Message: "denied by the conformance suite", ByUser: true}
}
