package chatcmd

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// asking is a question or permission prompt being answered, one line per
// question.
type asking struct {
	run        string
	toolUseID  string
	permission bool
	questions  []events.Question
	answers    map[string]string
}

// startAsking shows what the run waits for and collects the answer from the
// next lines.
func (c *chat) startAsking(run string, d events.ChatRunState) {
	if d.ToolUseID == "" {
		return
	}
	tool := c.tools[d.ToolUseID]
	a := &asking{run: run, toolUseID: d.ToolUseID, answers: map[string]string{}}
	if tool.Name == string(events.ToolAskUserQuestion) {
		var in events.AskUserQuestionInput
		_ = json.Unmarshal(tool.Input, &in)
		a.questions = in.Questions
	}
	if len(a.questions) == 0 {
		// A permission prompt, or a question whose call this client did not see.
		a.permission = d.Reason != "question"
		if !a.permission {
			a.questions = []events.Question{{Question: "The agent asks for input"}}
		}
	}
	c.runs[run] = true
	c.ask = a
	c.askNext()
}

// askNext prompts for the next unanswered question.
func (c *chat) askNext() {
	a := c.ask
	if a.permission {
		tool := c.tools[a.toolUseID]
		name := toolLine(tool)
		if tool.Name == "" {
			name = "the pending tool call"
		}
		c.out.promptf("Allow %s? [y/N] ", name)
		return
	}
	q := a.questions[len(a.answers)]
	c.out.linef("? %s", q.Question)
	for i, o := range q.Options {
		line := "  " + strconv.Itoa(i+1) + ". " + o.Label
		if o.Description != "" {
			line += " — " + o.Description
		}
		c.out.linef("%s", line)
	}
	hint := "answer"
	switch {
	case q.MultiSelect:
		hint = "numbers, comma-separated, or text"
	case len(q.Options) > 0:
		hint = "number or text"
	}
	c.out.promptf("%s> ", hint)
}

// answerLine takes one line as the answer to the open prompt and sends the
// whole answer once every question has one.
func (c *chat) answerLine(ctx context.Context, line string) error {
	a := c.ask
	ans := api.Answer{RunID: a.run, ToolUseID: a.toolUseID}
	if a.permission {
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes", "allow":
			ans.Decision = events.DecisionAllow
		default:
			ans.Decision = events.DecisionDeny
		}
	} else {
		q := a.questions[len(a.answers)]
		a.answers[q.Question] = pick(q, line)
		if len(a.answers) < len(a.questions) {
			c.askNext()
			return nil
		}
		ans.Answers = a.answers
	}
	if _, err := c.conn.Answer(ctx, c.session.ID, ans); err != nil {
		a.answers = map[string]string{} // ask again from the first question
		return err
	}
	c.ask = nil
	return nil
}

// pick turns a typed line into option labels: numbers choose options, any
// other text is the answer itself.
func pick(q events.Question, line string) string {
	line = strings.TrimSpace(line)
	var labels []string
	for _, part := range strings.Split(line, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > len(q.Options) || (!q.MultiSelect && len(labels) > 0) {
			return line
		}
		labels = append(labels, q.Options[n-1].Label)
	}
	return strings.Join(labels, ", ")
}
