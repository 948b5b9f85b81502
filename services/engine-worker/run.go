package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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
	sub       *nats.Subscription // ctl.run.<run>.>
	fenced    atomic.Bool
	released  atomic.Bool            // the run ended and its lease is being deleted
	policy    events.PermissionRules // the plan's merged rules

	mu        sync.Mutex
	state     events.RunStateName
	questions map[string]*question // parked by tool use id
	result    *events.Result       // the engine's last result
}

type question struct {
	permission bool
	reply      chan events.ControlRequest
}

// emit is the engine.Emit of this run.
func (r *run) emit(o events.Output) error {
	if res, ok := o.(events.Result); ok {
		r.mu.Lock()
		r.result = &res
		r.mu.Unlock()
	}
	return r.pub.emit(o)
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

// park waits for the answer to toolUseID, telling clients the run awaits input.
func (r *run) park(ctx context.Context, toolUseID string, permission bool) (events.ControlRequest, error) {
	q := &question{permission: permission, reply: make(chan events.ControlRequest, 1)}
	r.mu.Lock()
	if r.questions == nil {
		r.questions = map[string]*question{}
	}
	r.questions[toolUseID] = q
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.questions, toolUseID)
		r.mu.Unlock()
	}()
	reason := "question"
	if permission {
		reason = "permission"
	}
	if err := r.pub.emit(events.RunState{State: events.RunAwaitingInput, Reason: reason, ToolUseID: toolUseID}); err != nil {
		return events.ControlRequest{}, err
	}
	r.mu.Lock()
	r.state = events.RunAwaitingInput
	r.mu.Unlock()
	select {
	case reply := <-q.reply:
		if err := r.setState(events.RunRunning, "answered"); err != nil {
			return events.ControlRequest{}, err
		}
		return reply, nil
	case <-ctx.Done():
		return events.ControlRequest{}, context.Cause(ctx)
	}
}

// answer delivers a control answer to the parked question it names.
func (r *run) answer(req events.ControlRequest) error {
	r.mu.Lock()
	q, ok := r.questions[req.ToolUseID]
	r.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("no question pending for tool use %q in run %s", req.ToolUseID, r.job.RunID)
	case q.permission && req.Decision != events.DecisionAllow && req.Decision != events.DecisionDeny:
		return fmt.Errorf("tool use %q is a permission prompt: answer with decision allow or deny", req.ToolUseID)
	case !q.permission && len(req.Answers) == 0:
		return fmt.Errorf("tool use %q is a question: answer with answers", req.ToolUseID)
	}
	select {
	case q.reply <- req:
		return nil
	default:
		return fmt.Errorf("tool use %q was already answered", req.ToolUseID)
	}
}
