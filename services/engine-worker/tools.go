package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
)

// MCPServerName is the name the MCP bridge's internal tools have in every
// engine's MCP configuration: their canonical tool names are
// mcp__clopen__<tool>.
const MCPServerName = events.MCPInternalServer

// AskToolName is the canonical name of the bridge's ask_user tool.
const AskToolName = "mcp__" + MCPServerName + "__ask_user"

// AskWait is how long the bridge's ask parks a run: within the bus's
// window for the worker's reply (busauth.ResponseWindow), so the answer
// always reaches the bridge. A question left longer unanswered ends the
// agent's tool call with an error and the run goes on.
const AskWait = busauth.ResponseWindow - 5*time.Minute

// askSeenWait bounds how long an ask request of the bridge waits for the
// agent's ask_user tool_use to come out of its engine (which may report
// a tool call a moment after making it).
const askSeenWait = 30 * time.Second

// serveTool serves the MCP bridge's request for one of a run's tools
// (ctl.run.<run>.ask or .notify): only for a run this worker holds, of the
// tenant the agent's token named.
func (w *Worker) serveTool(m *nats.Msg, verb string) {
	reply := func(rep events.RunToolReply) {
		b, _ := json.Marshal(rep)
		if err := m.Respond(b); err != nil {
			w.log.Warn("reply to a tool request", "subject", m.Subject, "err", err)
		}
	}
	parts := strings.Split(m.Subject, ".") // ctl.run.<run>.<verb>
	var req events.RunToolRequest
	if len(parts) != 4 || json.Unmarshal(m.Data, &req) != nil {
		reply(events.RunToolReply{Error: "bad tool request"})
		return
	}
	r := w.lookup(parts[2])
	// A run of another tenant is reported exactly like a run we do not have.
	if r == nil || req.Tenant != r.job.Tenant || req.RunID != r.job.RunID || r.currentState().Terminal() {
		reply(events.RunToolReply{Error: "run " + parts[2] + " is not running"})
		return
	}
	switch verb {
	case events.VerbNotify:
		err := r.pub.emit(events.Notification{SessionID: r.job.ResumeSessionID, Level: req.Level, Title: req.Title, Message: req.Message})
		if err != nil {
			reply(events.RunToolReply{Error: "the notification was not sent: " + err.Error()})
			return
		}
		reply(events.RunToolReply{})
	case events.VerbAsk:
		answers, err := r.askFromBridge(req.Questions, AskWait)
		if err != nil {
			reply(events.RunToolReply{Error: err.Error()})
			return
		}
		reply(events.RunToolReply{Answers: answers})
	}
}

// askFromBridge parks the run on the agent's ask_user call, exactly as on
// an AskUserQuestion: the user answers the call's tool_use over the API,
// within wait.
func (r *run) askFromBridge(questions []events.Question, wait time.Duration) (map[string]string, error) {
	id, err := r.nextAsk()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(r.ctx, wait)
	defer cancel()
	answers, err := r.AskUser(ctx, id, events.AskUserQuestionInput{Questions: questions})
	if err != nil {
		if r.ctx.Err() == nil {
			// The run goes on without the answer: it no longer awaits one.
			_ = r.setState(events.RunRunning, "question unanswered")
			return nil, fmt.Errorf("the user did not answer within %s", wait)
		}
		return nil, errors.New("the question was not answered: " + err.Error())
	}
	return answers, nil
}
