package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// errLeaseLost is the cancel cause of a run whose lease renewal failed.
var errLeaseLost = errors.New("lease lost")

// errShutdown is the cancel cause when the worker stops.
var errShutdown = errors.New("worker shutting down")

// run is one claimed job: everything about it lives here, keyed by run id in
// the worker's registry. Stopping one run touches nothing else.
type run struct {
	job       events.Job
	epoch     uint64
	rev       atomic.Uint64 // current lease revision, for the CAS renewal
	renewedAt atomic.Int64  // unix nanos of the claim or the last successful renewal
	msg       jetstream.Msg // the job, acked at the very end
	ctx       context.Context
	cancel    context.CancelCauseFunc
	pub       *publisher
	spans     *runTrace          // the run's spans, made from what it publishes
	sub       *nats.Subscription // ctl.run.<run>.>
	fenced    atomic.Bool
	released  atomic.Bool            // the run ended and its lease is being deleted
	policy    events.PermissionRules // the plan's merged rules

	questions engine.Questions // what waits for the user, by tool use id
	// asks are the ids of the bridge's ask_user calls the agent made, in
	// order, for the bridge's ask request to park on (see serveTool);
	// askDone says which of them already have their result (the bridge
	// refused the call before asking), under mu.
	asks    chan string
	askDone map[string]bool

	mu     sync.Mutex
	state  events.RunStateName
	result *events.Result // the engine's last result
	// metered is what the model proxy counted for the run; nil when its
	// agent did not go through one. Only the run's own goroutine (handle)
	// sets and reads it.
	metered *events.TokenUsage
	// price is the run's model's list price from the catalog, which
	// prices its metered usage while it runs; nil when unknown.
	price *events.ModelCost
	// snapshot is the state the turn left (see Worker.capture); nil when
	// none was taken.
	snapshot *events.RunSnapshot
}

// emit is the engine.Emit of this run. A question is registered before its
// tool_use is published: a client may answer the moment it sees it.
func (r *run) emit(o events.Output) error {
	r.questions.Saw(o)
	r.sawAsks(o)
	if res, ok := o.(events.Result); ok {
		r.mu.Lock()
		r.result = &res
		r.mu.Unlock()
	}
	return r.pub.emit(o)
}

// sawAsks keeps the ids of the agent's ask_user calls for the bridge's ask
// requests, and notes those whose result came out without one.
func (r *run) sawAsks(o events.Output) {
	switch m := o.(type) {
	case events.AssistantMessage:
		for _, b := range m.Content {
			if tu, ok := b.(events.ToolUseBlock); ok && tu.Name == AskToolName {
				r.mu.Lock()
				if r.askDone == nil {
					r.askDone = map[string]bool{}
				}
				r.askDone[tu.ID] = false
				r.mu.Unlock()
				select {
				case r.asks <- tu.ID:
				default: // more asks than one turn makes: the bridge's wait fails
				}
			}
		}
	case events.UserMessage:
		for _, b := range m.Content {
			if tr, ok := b.(events.ToolResultBlock); ok {
				r.mu.Lock()
				if _, ok := r.askDone[tr.ToolUseID]; ok {
					r.askDone[tr.ToolUseID] = true
				}
				r.mu.Unlock()
			}
		}
	}
}

// nextAsk is the oldest of the agent's ask_user calls still without a
// result, waiting up to askSeenWait for one.
func (r *run) nextAsk() (string, error) {
	timeout := time.After(askSeenWait)
	for {
		select {
		case id := <-r.asks:
			r.mu.Lock()
			done := r.askDone[id]
			r.mu.Unlock()
			if !done {
				return id, nil
			}
		case <-r.ctx.Done():
			return "", errors.New("the run ended")
		case <-timeout:
			return "", errors.New("the engine did not report this ask_user call")
		}
	}
}

// setState records and publishes a run state change.
func (r *run) setState(s events.RunStateName, reason string) error {
	r.mu.Lock()
	r.state = s
	r.mu.Unlock()
	return r.pub.emit(events.RunState{State: s, Reason: reason})
}

// setRunning publishes the running transition with the artifact revision
// the run was configured from and the effort it runs with (nil: not known).
func (r *run) setRunning(revision int64, effort *string) error {
	r.mu.Lock()
	r.state = events.RunRunning
	r.mu.Unlock()
	return r.pub.emit(events.RunState{State: events.RunRunning, ArtifactRevision: revision, ReasoningEffort: effort})
}

func (r *run) currentState() events.RunStateName {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// AskUser implements engine.Interaction.
func (r *run) AskUser(ctx context.Context, toolUseID string, _ events.AskUserQuestionInput) (map[string]string, error) {
	reply, err := r.park(ctx, toolUseID, false)
	if err != nil {
		return nil, err
	}
	return reply.Answers, nil
}

// Permit implements engine.Interaction: the policy refuses what it does
// not admit; the user is asked when the engine insists.
func (r *run) Permit(ctx context.Context, p engine.PermissionRequest) (engine.Decision, error) {
	if !r.policy.Allows(p.Tool) {
		return engine.Decision{Allow: false, Message: fmt.Sprintf("%s is denied by this project's permissions", p.Tool)}, nil
	}
	if !p.Ask {
		return engine.Decision{Allow: true}, nil
	}
	reply, err := r.park(ctx, p.ToolUseID, true)
	if err != nil {
		return engine.Decision{}, err
	}
	if reply.Decision == events.DecisionAllow {
		return engine.Decision{Allow: true, ByUser: true}, nil
	}
	msg := reply.Message
	if msg == "" {
		msg = "the user declined this tool call"
	}
	return engine.Decision{Allow: false, Message: msg, ByUser: true}, nil
}

// park waits for the answer to toolUseID, telling clients the run awaits
// input once the question is pending (a question already is from the moment
// its tool_use was emitted: see engine.Questions).
func (r *run) park(ctx context.Context, toolUseID string, permission bool) (engine.Reply, error) {
	reason := "question"
	if permission {
		reason = "permission"
	}
	reply, err := r.questions.Park(ctx, toolUseID, permission, func() error {
		if err := r.pub.emit(events.RunState{State: events.RunAwaitingInput, Reason: reason, ToolUseID: toolUseID}); err != nil {
			return err
		}
		r.mu.Lock()
		r.state = events.RunAwaitingInput
		r.mu.Unlock()
		return nil
	})
	if err != nil {
		return engine.Reply{}, err
	}
	if err := r.setState(events.RunRunning, "answered"); err != nil {
		return engine.Reply{}, err
	}
	return reply, nil
}

// answer delivers a control answer to the question or prompt it names.
func (r *run) answer(req events.ControlRequest) error {
	err := r.questions.Answer(req.ToolUseID, engine.Reply{Answers: req.Answers, Decision: req.Decision, Message: req.Message})
	if err != nil {
		return fmt.Errorf("run %s: %w", r.job.RunID, err)
	}
	return nil
}
