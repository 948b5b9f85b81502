package stack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/streammgr"
)

// loopCalls is how many model calls the looping command makes, one every
// loopPause: far more than the budget lets through.
const (
	loopCalls = 40
	loopPause = "0.3"
)

// TestABudgetStopsAConfinedClaudeTurn: Claude Code runs confined, so every
// model call goes through the worker's model proxy, which reports the
// turn's usage while it runs. The turn runs a command that calls the model
// in a loop (40 calls of about 2,000 tokens, 0.3 s apart, with the agent's
// placeholder key: usage the agent itself never reports). The tenant's
// budget leaves room for the agent's own call and about three of the
// loop's: the turn is stopped mid-command (failed, budget_exhausted), its
// process group is killed, so the provider sees no further call, and the
// overshoot is measured.
func TestABudgetStopsAConfinedClaudeTurn(t *testing.T) {
	const mark = "budget-loop-call"
	prov := &provider{next: fakellm.New(fakellm.Config{}), mark: mark}
	h := startConfinedClaude(t, prov)
	a := h.account("budget-claude")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	me, err := a.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newSession := func() string {
		s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: events.EngineClaudeCode, Model: "claude-opus-5-5"})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	// A plain turn first says what one call of the agent's costs here.
	first, err := a.c.SendMessage(ctx, newSession(), api.SendMessage{Text: "Say hello."})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := pollRun(ctx, a.c, first.RunID, func(r events.Run) (bool, error) { return r.State.Terminal(), nil })
	if err != nil || r1.State != events.RunCompleted || r1.MeteredUsage == nil {
		t.Fatalf("the plain turn: %+v, %v", r1, err)
	}
	agentCall := counted(*r1.MeteredUsage)
	payload := strings.Repeat("spend ", 1300) // about 2,000 input tokens a call at fakellm's 4 bytes a token
	perCall := int64(len(payload)+len(mark))/4 + 40
	limit := 2*agentCall + 3*perCall
	if err := streammgr.SetTenantBudget(ctx, h.st.DB, me.Tenant.ID,
		events.Budget{Unit: events.BudgetTokens, Period: events.PeriodDay, Limit: float64(limit)}, false, audit.Operator); err != nil {
		t.Fatal(err)
	}
	loop := fmt.Sprintf(`for i in $(seq 1 %d); do curl -sS -o /dev/null -H "x-api-key: $ANTHROPIC_API_KEY" -H 'content-type: application/json' `+
		`"$ANTHROPIC_BASE_URL/v1/messages" -d '{"model":"claude-haiku-4-5","max_tokens":20,"messages":[{"role":"user","content":"%s %s"}]}'; `+
		`sleep %s; done`, loopCalls, mark, payload, loopPause)
	sent, err := a.c.SendMessage(ctx, newSession(), api.SendMessage{Text: shellPrompt(loop) + " Run it."})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := pollRun(ctx, a.c, sent.RunID, func(r events.Run) (bool, error) { return r.State.Terminal(), nil })
	if err != nil {
		t.Fatal(err)
	}
	if r2.State != events.RunFailed || r2.ErrorKind != string(events.KindBudgetExhausted) || !strings.Contains(r2.Error, "was reached") {
		t.Fatalf("the looping turn ended %s %s %q, want failed budget_exhausted", r2.State, r2.ErrorKind, r2.Error)
	}
	atEnd := prov.markedCalls()
	time.Sleep(3 * time.Second) // ten loop pauses: a loop still running would call again
	if later := prov.markedCalls(); later != atEnd {
		t.Errorf("the loop made %d more calls after its turn ended: its process was not stopped", later-atEnd)
	}
	if atEnd == 0 || atEnd > loopCalls/2 {
		t.Errorf("the loop made %d of its %d calls, want it stopped within a few calls of the budget (about the third)", atEnd, loopCalls)
	}
	b, err := a.c.Budget(ctx)
	if err != nil || len(b.Budgets) != 1 {
		t.Fatal(b, err)
	}
	spent := b.Budgets[0].Spent
	t.Logf("budget %d tokens (the agent's calls %d each, the loop's ~%d): spent %.0f, %.0f past it (%.1f loop calls); "+
		"the loop made %d of its %d calls; the turn ran %v", limit, agentCall, perCall, spent, spent-float64(limit),
		(spent-float64(limit))/float64(perCall), atEnd, loopCalls, r2.EndedAt.Sub(*r2.ClaimedAt).Round(time.Millisecond))
	if spent < float64(limit) {
		t.Errorf("spent %.0f, under the budget %d: the turn was stopped before it crossed it", spent, limit)
	}
}

// counted is what a budget counts of u: input, output and cache writes.
func counted(u events.TokenUsage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheCreationInputTokens
}
