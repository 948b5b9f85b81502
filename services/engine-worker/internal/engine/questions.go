package engine

import (
	"context"
	"fmt"
	"sync"

	"clopen.dev/pkg/events"
)

// Reply is the user's answer to a question or a permission prompt.
type Reply struct {
	Answers  map[string]string // a question: question text -> chosen label
	Decision string            // a permission prompt: events.DecisionAllow or DecisionDeny
	Message  string            // a denial's reason, shown to the model
}

// Questions holds one run's questions and permission prompts that wait for
// the user, by tool use id. The zero value is ready; it is safe for
// concurrent use.
//
// A question is pending from the moment its AskUserQuestion tool_use is
// emitted, not only once the adapter parks on it: clients are told they may
// answer when they see that tool_use (chat:waiting-input), and an agent
// asks a moment later (Claude Code's can_use_tool comes tens of
// milliseconds after its tool_use). An answer given in between is kept for
// the adapter. A permission prompt is pending once Park has it; clients
// learn of it from the announcement Park makes after that.
type Questions struct {
	mu sync.Mutex
	m  map[string]*pending
}

type pending struct {
	permission bool
	parked     bool
	reply      chan Reply // holds the one answer
}

// Saw registers the questions an output asks, before the output is
// published. A question whose tool result goes out without the adapter
// ever parking on it (the agent answered it itself) is forgotten.
func (q *Questions) Saw(o events.Output) {
	switch v := o.(type) {
	case events.AssistantMessage:
		for _, b := range v.Content {
			if tu, ok := b.(events.ToolUseBlock); ok && tu.Name == string(events.ToolAskUserQuestion) {
				q.mu.Lock()
				q.entry(tu.ID, false)
				q.mu.Unlock()
			}
		}
	case events.UserMessage:
		for _, b := range v.Content {
			if tr, ok := b.(events.ToolResultBlock); ok {
				q.mu.Lock()
				if p := q.m[tr.ToolUseID]; p != nil && !p.parked {
					delete(q.m, tr.ToolUseID)
				}
				q.mu.Unlock()
			}
		}
	}
}

// entry returns the pending entry of id, creating it; q.mu is held.
func (q *Questions) entry(id string, permission bool) *pending {
	if q.m == nil {
		q.m = map[string]*pending{}
	}
	p := q.m[id]
	if p == nil {
		p = &pending{permission: permission, reply: make(chan Reply, 1)}
		q.m[id] = p
	}
	return p
}

// Park waits for the answer to toolUseID. announce, when not nil, is called
// once the prompt is pending (it tells clients they may answer); an answer
// that came before Park is returned at once.
func (q *Questions) Park(ctx context.Context, toolUseID string, permission bool, announce func() error) (Reply, error) {
	q.mu.Lock()
	p := q.entry(toolUseID, permission)
	p.permission, p.parked = permission, true
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		if q.m[toolUseID] == p {
			delete(q.m, toolUseID)
		}
		q.mu.Unlock()
	}()
	if announce != nil {
		if err := announce(); err != nil {
			return Reply{}, err
		}
	}
	select {
	case r := <-p.reply:
		return r, nil
	case <-ctx.Done():
		return Reply{}, context.Cause(ctx)
	}
}

// Answer delivers r to the pending question or prompt toolUseID. It fails
// when none is pending, when r is the wrong kind of answer, or when the
// prompt was already answered.
func (q *Questions) Answer(toolUseID string, r Reply) error {
	q.mu.Lock()
	p, ok := q.m[toolUseID]
	permission := ok && p.permission
	q.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("no question pending for tool use %q", toolUseID)
	case permission && r.Decision != events.DecisionAllow && r.Decision != events.DecisionDeny:
		return fmt.Errorf("tool use %q is a permission prompt: answer with decision allow or deny", toolUseID)
	case !permission && len(r.Answers) == 0:
		return fmt.Errorf("tool use %q is a question: answer with answers", toolUseID)
	}
	select {
	case p.reply <- r:
		return nil
	default:
		return fmt.Errorf("tool use %q was already answered", toolUseID)
	}
}
