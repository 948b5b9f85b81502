package codex

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
)

// interruptedText is the error of an interrupted turn's result.
const interruptedText = "Interrupted by user"

// tokens adds up what the turn's model calls spent. Each update that moves
// the thread's total carries the last call's usage; updates of other turns
// (a fork reports the usage it inherits) and repeats (codex re-sends the
// total when a turn ends) add nothing.
func (c *Converter) tokens(p tokenUsageParams) {
	t := p.TokenUsage.Total
	moved := t.TotalTokens != c.seen.TotalTokens
	c.seen = t
	if c.turn == "" || p.TurnID != c.turn || !moved {
		return
	}
	l := p.TokenUsage.Last
	c.calls++
	c.used.InputTokens += l.InputTokens
	c.used.CachedInputTokens += l.CachedInputTokens
	c.used.CacheWriteInputTokens += l.CacheWriteInputTokens
	c.used.OutputTokens += l.OutputTokens
}

// Usage is the tokens the turn spent. Input counts uncached input only,
// as Anthropic's does; cached input is CacheReadInputTokens.
func (c *Converter) Usage() events.TokenUsage {
	u := c.used
	return events.TokenUsage{InputTokens: max(u.InputTokens-u.CachedInputTokens, 0), OutputTokens: u.OutputTokens,
		CacheReadInputTokens: u.CachedInputTokens, CacheCreationInputTokens: u.CacheWriteInputTokens}
}

// rateLimits reports a window that is used up (rejected) or nearly so
// (allowed_warning, from 80 %); quiet windows are not news.
func (c *Converter) rateLimits(p rateLimitsParams) {
	rl := p.RateLimits
	reached := len(rl.RateLimitReachedType) > 0 && !bytes.Equal(rl.RateLimitReachedType, []byte("null"))
	var worst *rateLimitWindow
	for _, w := range []*rateLimitWindow{rl.Primary, rl.Secondary} {
		if w != nil && (worst == nil || w.UsedPercent > worst.UsedPercent) {
			worst = w
		}
	}
	if worst == nil || !reached && worst.UsedPercent < 80 {
		return
	}
	out := events.RateLimit{SessionID: c.thread, Status: events.RateLimitAllowedWarning, Utilization: worst.UsedPercent / 100}
	if reached || worst.UsedPercent >= 100 {
		out.Status = events.RateLimitRejected
	}
	if worst.ResetsAt != nil {
		out.ResetsAt = *worst.ResetsAt
	}
	if m := worst.WindowDurationMins; m != nil {
		switch {
		case *m == 300:
			out.RateLimitType = events.RateLimitFiveHour
		case *m == 10080:
			out.RateLimitType = events.RateLimitSevenDay
		}
	}
	c.add(out)
}

// completed ends the turn: a partial answer of an interrupted turn is kept
// (stop reason interrupted), then the result.
func (c *Converter) completed(p turnParams) {
	if c.turn != "" && p.Turn.ID != "" && p.Turn.ID != c.turn {
		return
	}
	c.ended = &turnEnd{status: p.Turn.Status, err: p.Turn.Error}
	if p.Turn.Status == "interrupted" {
		for id, b := range c.texts {
			if b.Len() > 0 {
				c.add(events.AssistantMessage{MessageBase: c.base(id), StopReason: events.StopInterrupted,
					Content: []events.Block{events.TextBlock{Text: b.String()}}})
			}
		}
		c.texts = nil
	}
	c.add(c.result())
}

// result is the turn's result.
func (c *Converter) result() events.Result {
	r := events.Result{SessionID: c.thread, NumTurns: max(c.calls, 1), Usage: c.Usage()}
	switch c.ended.status {
	case "completed":
		r.Subtype, r.StopReason = events.ResultSuccess, string(events.StopEndTurn)
	case "interrupted":
		r.Subtype, r.Errors = events.ResultErrorDuringExecution, []string{interruptedText}
	default:
		r.Subtype, r.Errors = events.ResultErrorDuringExecution, []string{c.failure()}
	}
	return r
}

// Interrupted ends a turn the app-server did not end itself after an
// interrupt (it died or never answered).
func (c *Converter) Interrupted() []events.Output {
	c.out = nil
	c.completed(turnParams{Turn: struct {
		ID     string     `json:"id"`
		Status string     `json:"status"`
		Error  *TurnError `json:"error"`
	}{ID: c.turn, Status: "interrupted"}})
	return c.Take()
}

// failure is the message of a failed turn.
func (c *Converter) failure() string {
	if e := c.ended.err; e != nil && e.Message != "" {
		return errorText(*e)
	}
	return cmp.Or(c.lastError, "Codex ended the turn with an error")
}

// Err is the classified error of a failed turn, nil otherwise.
func (c *Converter) Err() error {
	if c.ended == nil || c.ended.status != "failed" {
		return nil
	}
	var info json.RawMessage
	if c.ended.err != nil {
		info = c.ended.err.CodexErrorInfo
	}
	return turnError(c.failure(), info)
}

// errorText is a turn error's message with its details, without codex's
// JSON wrapping of a provider's error body when it can be read.
func errorText(e TurnError) string {
	msg := strings.TrimSpace(e.Message)
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(msg), &body) == nil && body.Error.Message != "" {
		msg = body.Error.Message
	}
	if d := strings.TrimSpace(e.AdditionalDetails); d != "" && !strings.Contains(msg, d) {
		msg += " - " + d
	}
	if status := infoStatus(e.CodexErrorInfo); status != 0 && !strings.Contains(msg, strconv.Itoa(status)) {
		msg += fmt.Sprintf(" (HTTP %d)", status)
	}
	return msg
}
