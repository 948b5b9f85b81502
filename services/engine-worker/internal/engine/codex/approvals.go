package codex

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// serverRequest answers codex's requests. Approvals and questions go to the
// run's Interaction in their own goroutine (a person may take minutes, and
// the turn must still notice an interrupt); the call they are about is on
// screen before anyone is asked. Requests Clopen has no answer for are
// refused.
func (t *turn) serverRequest(ctx context.Context, m Message) error {
	switch m.Method {
	case "item/commandExecution/requestApproval":
		var p commandApprovalParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return t.c.refuse(m.ID, "unreadable approval request")
		}
		input := bashInput(p.Command)
		t.conv.ToolUse(p.ItemID, string(events.ToolBash), input)
		uses := []toolUse{{id: p.ItemID, name: string(events.ToolBash), input: input}}
		return t.ask(ctx, m.ID, func(ctx context.Context) answer { return t.permit(ctx, m.ID, uses, decisionOf) })
	case "item/fileChange/requestApproval":
		var p fileApprovalParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return t.c.refuse(m.ID, "unreadable approval request")
		}
		uses := t.conv.FileUses(p.ItemID)
		if len(uses) == 0 { // the item has not said which files: ask about the change as a whole
			uses = []toolUse{{id: p.ItemID, name: string(events.ToolPatch), input: mustJSON(map[string]any{"reason": p.Reason})}}
			t.conv.ToolUse(p.ItemID, string(events.ToolPatch), uses[0].input)
		}
		return t.ask(ctx, m.ID, func(ctx context.Context) answer { return t.permit(ctx, m.ID, uses, decisionOf) })
	case "mcpServer/elicitation/request":
		var p elicitationParams
		if err := json.Unmarshal(m.Params, &p); err != nil || p.Meta.ApprovalKind != "mcp_tool_call" {
			// A real elicitation (a form an MCP server wants filled): not offered.
			t.log.Info("codex: declining an MCP elicitation", "server", p.ServerName)
			return t.c.respond(m.ID, elicitation(false))
		}
		name := MCPToolName(p.ServerName, p.Meta.ToolName)
		id := t.conv.OpenMCPCall(p.ServerName, p.Meta.ToolName)
		input := mcpInput(p.Meta.ToolParams)
		if id == "" {
			id = "mcp_" + string(m.ID)
			t.conv.ToolUse(id, name, input)
		}
		uses := []toolUse{{id: id, name: name, input: input}}
		return t.ask(ctx, m.ID, func(ctx context.Context) answer {
			return t.permit(ctx, m.ID, uses, func(ok bool) any { return elicitation(ok) })
		})
	case "item/tool/requestUserInput":
		var p userInputParams
		if err := json.Unmarshal(m.Params, &p); err != nil || len(p.Questions) == 0 {
			return t.c.refuse(m.ID, "unreadable question")
		}
		input := questionInput(p)
		t.conv.ToolUse(p.ItemID, string(events.ToolAskUserQuestion), mustJSON(input))
		return t.ask(ctx, m.ID, func(ctx context.Context) answer { return t.question(ctx, m.ID, p, input) })
	}
	t.log.Info("codex: refusing server request", "method", m.Method)
	return t.c.refuse(m.ID, "not supported by Clopen: "+m.Method)
}

// ask emits what the request put on screen and decides it in a goroutine.
func (t *turn) ask(ctx context.Context, id json.RawMessage, decide func(context.Context) answer) error {
	if err := t.emitAll(t.conv.Take()); err != nil {
		return err
	}
	t.dialogs.Go(ctx, decide)
	return nil
}

// permit asks Permit about every call; the request is accepted only when
// all of them are allowed.
func (t *turn) permit(ctx context.Context, id json.RawMessage, uses []toolUse, reply func(bool) any) answer {
	for _, u := range uses {
		d, err := t.req.Interaction.Permit(ctx, engine.PermissionRequest{ToolUseID: u.id, Tool: u.name, Input: u.input})
		if err != nil || !d.Allow {
			return answer{id: id, result: reply(false)}
		}
	}
	return answer{id: id, result: reply(true)}
}

func decisionOf(ok bool) any {
	if ok {
		return map[string]any{"decision": "accept"}
	}
	return map[string]any{"decision": "decline"}
}

func elicitation(ok bool) any {
	action := "decline"
	if ok {
		action = "accept"
	}
	return map[string]any{"action": action, "content": nil, "_meta": nil}
}

// questionInput is request_user_input as AskUserQuestion's canonical input.
func questionInput(p userInputParams) events.AskUserQuestionInput {
	in := events.AskUserQuestionInput{Questions: make([]events.Question, 0, len(p.Questions))}
	for _, q := range p.Questions {
		cq := events.Question{Question: q.Question, Header: q.Header, Options: []events.QuestionOption{}}
		for _, o := range q.Options {
			cq.Options = append(cq.Options, events.QuestionOption{Label: o.Label, Description: o.Description})
		}
		in.Questions = append(in.Questions, cq)
	}
	return in
}

// question asks the user and answers codex by question id; the tool result
// (codex keeps no item for the call) goes out once the answer is sent.
func (t *turn) question(ctx context.Context, id json.RawMessage, p userInputParams, input events.AskUserQuestionInput) answer {
	got, err := t.req.Interaction.AskUser(ctx, p.ItemID, input)
	answers := map[string]any{}
	var lines []string
	for _, q := range p.Questions {
		label, ok := got[q.Question]
		if err != nil || !ok {
			continue
		}
		answers[q.ID] = map[string]any{"answers": []string{label}}
		lines = append(lines, q.Question+": "+label)
	}
	sort.Strings(lines)
	content, isErr := strings.Join(lines, "\n"), false
	if err != nil {
		content, isErr = "The question was not answered: "+err.Error(), true
	}
	return answer{id: id, result: map[string]any{"answers": answers},
		after: func() { t.conv.ToolResult(p.ItemID, content, isErr) }}
}
