package stack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
	"clopen.dev/services/streammgr"
)

// spend is a scripted turn that spends steadily: 40 model calls of 1,100
// counted tokens (1,000 input, 100 output; its 2,000 cache reads are not
// counted), one about every 150 ms, each reported as a usage event.
const spend = "scripted/spend?delay=50ms"

// TestABudgetStopsOnlyThatTenantsTurns: tenant A has a budget of 6,000
// tokens a day and runs two turns at once that would spend 44,000 each;
// tenant B, without a budget, runs the same turn beside them. Once A's
// usage reaches the budget, both of A's turns — the one that crossed it and
// the other, since the budget is the tenant's — are stopped: they end failed
// with budget_exhausted and the budget's numbers, which their clients see
// as chat:error. B's turn completes. A's next send is refused with 402
// budget_exhausted over REST and over the WebSocket, saying the budget,
// the spend and the reset; A's admins read their budget over REST, its
// members may not. The test measures how far past the budget the turns
// got, and how long after the crossing they stopped.
func TestABudgetStopsOnlyThatTenantsTurns(t *testing.T) {
	h := start(t, Config{Gateway: unthrottled()})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, b := h.account("budget-a"), h.account("budget-b")
	me, err := a.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 6000
	if err := streammgr.SetTenantBudget(ctx, h.st.DB, me.Tenant.ID,
		events.Budget{Unit: events.BudgetTokens, Period: events.PeriodDay, Limit: limit}, false, audit.Operator); err != nil {
		t.Fatal(err)
	}
	session := func(acc account) string {
		s, err := acc.c.CreateSession(ctx, acc.project.ID, api.CreateSession{Model: spend})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	a1, a2, b1 := session(a), session(a), session(b)
	feed := h.follow(me.Tenant.ID, a1, 0)
	var runs []string
	for _, s := range []struct {
		acc  account
		sess string
	}{{a, a1}, {a, a2}, {b, b1}} {
		r, err := s.acc.c.SendMessage(ctx, s.sess, api.SendMessage{Text: "spend"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r.RunID)
	}
	final := map[string]events.Run{}
	for i, id := range runs {
		c := a.c
		if i == 2 {
			c = b.c
		}
		r, err := pollRun(ctx, c, id, func(r events.Run) (bool, error) { return r.State.Terminal(), nil })
		if err != nil {
			t.Fatal(err)
		}
		final[id] = r
	}
	for _, id := range runs[:2] {
		r := final[id]
		if r.State != events.RunFailed || r.ErrorKind != string(events.KindBudgetExhausted) ||
			!strings.Contains(r.Error, "budget of 6,000 tokens per day (UTC) was reached") {
			t.Errorf("tenant A's run %s ended %s %s %q, want failed budget_exhausted naming the budget", id, r.State, r.ErrorKind, r.Error)
		}
	}
	if r := final[runs[2]]; r.State != events.RunCompleted || r.Usage == nil || r.Usage.InputTokens != 40_000 {
		t.Errorf("tenant B's run ended %s (%s) with usage %+v, want completed with its 40 calls", r.State, r.Error, r.Usage)
	}
	feed.waitFor(t, 30*time.Second, func(ev events.ChatEvent) bool {
		e, ok := ev.Data.(events.ChatError)
		return ok && ev.RunID == runs[0] && e.ErrorKind == events.KindBudgetExhausted && strings.Contains(e.Error, "6,000 tokens per day")
	})

	got, err := a.c.Budget(ctx)
	if err != nil || len(got.Budgets) != 1 || !got.Budgets[0].Exhausted {
		t.Fatalf("GET /v1/budget = %+v, %v; want the one budget, spent", got, err)
	}
	spent := got.Budgets[0].Spent
	crossed, stopped := crossing(t, ctx, a.c, runs[:2], final, limit)
	t.Logf("budget %d tokens: tenant A's two turns spent %.0f (%.0f past it, %.1f model calls of 1,100); stopped %v after the crossing",
		limit, spent, spent-limit, (spent-limit)/1100, stopped.Sub(crossed).Round(time.Millisecond))
	if spent < limit || spent > 2*22_000 {
		t.Errorf("tenant A spent %.0f tokens; want past its budget of %d and well short of its turns' 88,000", spent, limit)
	}

	// The next send is refused, over REST and the WebSocket, and nothing is queued.
	_, err = a.c.SendMessage(ctx, session(a), api.SendMessage{Text: "one more"})
	var apiErr *events.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusPaymentRequired || apiErr.Code != "budget_exhausted" ||
		apiErr.Budget == nil || apiErr.Budget.Spent != spent || apiErr.Budget.Limit != limit || apiErr.RetryAfter <= 0 ||
		!strings.Contains(apiErr.Message, "resets at") {
		t.Errorf("REST send past the budget = %v (%+v), want 402 budget_exhausted with the budget, the spend and a Retry-After", err, apiErr)
	}
	cn, err := a.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	_, err = cn.Send(ctx, session(a), api.SendMessage{Text: "over the socket"})
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusPaymentRequired || apiErr.Code != "budget_exhausted" || apiErr.Budget == nil {
		t.Errorf("WebSocket send past the budget = %v, want budget_exhausted with the budget", err)
	}
	if _, err := b.c.SendMessage(ctx, b1, api.SendMessage{Text: "tenant B goes on"}); err != nil {
		t.Errorf("tenant B's send: %v", err)
	}

	// Members may not read the budget.
	if _, err := gateway.CreateUser(ctx, h.st.DB, "budget-a", api.CreateUser{Email: "member@budget-a", Name: "M", Role: "member"}); err != nil {
		t.Fatal(err)
	}
	key, err := gateway.CreateKey(ctx, h.st.DB, "budget-a", "member@budget-a", "m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(h.st.URL, key.Key).Budget(ctx); !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
		t.Errorf("a member's GET /v1/budget = %v, want 403", err)
	}
}

// crossing reads when the tenant's turns' usage reports first added up to
// limit (each run's newest report counts) and when the last of them ended.
func crossing(t *testing.T, ctx context.Context, c *client.Client, runs []string, final map[string]events.Run, limit int64) (crossed, stopped time.Time) {
	t.Helper()
	type report struct {
		run string
		at  time.Time
		n   int64
	}
	var all []report
	for _, id := range runs {
		evs, err := c.RunEvents(ctx, id, 0, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Type != events.TypeUsage {
				continue
			}
			var u events.RunUsage
			if err := json.Unmarshal(ev.Output, &u); err != nil {
				t.Fatal(err)
			}
			all = append(all, report{id, ev.CreatedAt, u.Usage.InputTokens + u.Usage.OutputTokens + u.Usage.CacheCreationInputTokens})
		}
		if e := final[id].EndedAt; e != nil && e.After(stopped) {
			stopped = *e
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	latest := map[string]int64{}
	for _, r := range all {
		latest[r.run] = r.n
		var sum int64
		for _, n := range latest {
			sum += n
		}
		if sum >= limit {
			return r.at, stopped
		}
	}
	t.Fatalf("the turns' usage reports never reached %d", limit)
	return
}
