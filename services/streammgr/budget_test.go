package streammgr

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/services/streammgr/internal/store"
)

// report publishes a usage report of run as its worker does.
func (s *admissionStack) report(p party, session, run string, u events.RunUsage, n int) {
	s.t.Helper()
	b := bus{js: s.js, log: logging.Discard()}
	if err := b.inject(s.ctx, p.TenantID, session, run, u, "test:"+run+":usage:"+string(rune('a'+n))); err != nil {
		s.t.Fatal(err)
	}
}

// spentNow is the tenant's token spend today, as budgets count it.
func (s *admissionStack) spentNow(p party) store.Spent {
	s.t.Helper()
	from, to := events.PeriodDay.Bounds(time.Now())
	sp, err := store.Spend(s.ctx, s.db, p.TenantID, from, to)
	if err != nil {
		s.t.Fatal(err)
	}
	return sp
}

func setBudget(t *testing.T, s *admissionStack, p party, b events.Budget) {
	t.Helper()
	if err := SetTenantBudget(s.ctx, s.db, p.TenantID, b, false, audit.Operator); err != nil {
		t.Fatal(err)
	}
}

// TestASpentBudgetRefusesTheSend: a tenant's running turn reports usage
// past the tenant's daily token budget; its next send is refused with 402
// budget_exhausted saying the budget, what was spent (the proxy's count,
// which wins over the engine's; cache reads not counted) and when the
// period resets, and nothing is queued. Another tenant sends as before.
// Deleting the session that spent it gives nothing back; once what it
// spent belongs to the previous day, the send goes.
func TestASpentBudgetRefusesTheSend(t *testing.T) {
	s := startAdmission(t, testConfig())
	a, b := newParty(), newParty()
	setBudget(t, s, a, events.Budget{Unit: events.BudgetTokens, Period: events.PeriodDay, Limit: 5000})
	sess := s.session(a)
	first := s.mustSend(a, sess, "spend")
	s.report(a, sess, first.RunID, events.RunUsage{Source: events.UsageFromProxy,
		Usage: events.TokenUsage{InputTokens: 4000, OutputTokens: 1200, CacheReadInputTokens: 90000}}, 0)
	// An engine report after the proxy's does not replace it.
	s.report(a, sess, first.RunID, events.RunUsage{Source: events.UsageFromEngine, Usage: events.TokenUsage{InputTokens: 10}}, 1)
	s.waitFor("the usage reports are committed", func() bool { return s.spentNow(a).Tokens == 5200 })
	time.Sleep(200 * time.Millisecond) // the engine's report, right behind, changes nothing
	if got := s.spentNow(a).Tokens; got != 5200 {
		t.Fatalf("spend %d after the engine's report, want the proxy's 5200 kept", got)
	}

	other := s.session(a)
	_, err := s.send(a, other, "one more")
	var apiErr *events.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusPaymentRequired || apiErr.Code != "budget_exhausted" {
		t.Fatalf("send past the budget = %v, want 402 budget_exhausted", err)
	}
	_, reset := events.PeriodDay.Bounds(time.Now())
	bs := apiErr.Budget
	if bs == nil || bs.Limit != 5000 || bs.Spent != 5200 || !bs.ResetsAt.Equal(reset) || bs.Unit != events.BudgetTokens || !bs.Exhausted {
		t.Fatalf("refusal's budget = %+v, want 5,000 tokens a day, 5,200 spent, resetting at %s", bs, reset)
	}
	for _, want := range []string{"5,000 tokens per day (UTC)", "5,200 tokens spent", reset.Format(time.RFC3339), "nothing was queued"} {
		if !strings.Contains(apiErr.Message, want) {
			t.Errorf("refusal %q does not say %q", apiErr.Message, want)
		}
	}
	if apiErr.RetryAfter <= 0 || time.Duration(apiErr.RetryAfter)*time.Second > 24*time.Hour+time.Second {
		t.Errorf("Retry-After %d s, want the time to the reset", apiErr.RetryAfter)
	}
	var n int
	if err := s.db.QueryRow(s.ctx, `SELECT count(*) FROM streammgr.runs WHERE session_id = $1`, other).Scan(&n); err != nil || n != 0 {
		t.Errorf("the refused send left %d runs (%v), want none", n, err)
	}
	if _, err := s.send(b, s.session(b), "tenant b has no budget"); err != nil {
		t.Errorf("tenant B's send: %v", err)
	}

	// Deleting the session that spent it gives nothing back.
	if err := s.try(events.OpSessionDelete, events.SessionRef{Caller: a.Caller, SessionID: sess}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.send(a, other, "after deleting what spent it"); !errors.As(err, &apiErr) || apiErr.Code != "budget_exhausted" {
		t.Errorf("send after deleting the spending session = %v, want still budget_exhausted", err)
	}
	// The period rolls over: what was spent belongs to yesterday.
	if _, err := s.db.Exec(s.ctx, `UPDATE streammgr.tenant_spend SET day = day - 1 WHERE tenant_id = $1`, a.TenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.send(a, other, "a new day"); err != nil {
		t.Errorf("send after the period rolled over: %v", err)
	}
}

// TestASpentBudgetStopsOnlyThatTenantsRuns: with no worker to answer, the
// budget watch ends the tenant's running turns itself (and leaves a flag
// for a worker that claims them late):
// failed with budget_exhausted and the budget's numbers. The other
// tenant's running turn is untouched. A turn that was held for the
// tenant's admission stays held while the budget is spent, and starts once
// the operator raises it.
func TestASpentBudgetStopsOnlyThatTenantsRuns(t *testing.T) {
	cfg := testConfig()
	cfg.SweepEvery = 300 * time.Millisecond // the sweep admits a held run once the budget allows
	s := startAdmission(t, cfg)
	a, b := newParty(), newParty()
	if err := SetTenantLimits(s.ctx, s.db, a.TenantID, TenantLimits{MaxConcurrent: limit(2)}); err != nil {
		t.Fatal(err)
	}
	setBudget(t, s, a, events.Budget{Unit: events.BudgetUSD, Period: events.PeriodMonth, Limit: 1})
	sa1, sa2, sa3, sb := s.session(a), s.session(a), s.session(a), s.session(b)
	a1, a2 := s.mustSend(a, sa1, "a1"), s.mustSend(a, sa2, "a2")
	held := s.mustSend(a, sa3, "a3, held at the limit")
	b1 := s.mustSend(b, sb, "b1")
	if !held.Queued {
		t.Fatalf("a3 = %+v, want held", held)
	}
	s.report(b, sb, b1.RunID, events.RunUsage{Source: events.UsageFromEngine, CostUSD: 50}, 0) // B has no budget
	s.report(a, sa1, a1.RunID, events.RunUsage{Source: events.UsageFromEngine, CostUSD: 0.6}, 0)
	s.report(a, sa1, a1.RunID, events.RunUsage{Source: events.UsageFromEngine, CostUSD: 1.1}, 1) // crosses $1

	for _, id := range []string{a1.RunID, a2.RunID} {
		s.waitFor("tenant A's running turns end", func() bool { return s.run(id).State.Terminal() })
		var state, kind, msg string
		if err := s.db.QueryRow(s.ctx, `SELECT state, coalesce(error_kind, ''), coalesce(error, '') FROM streammgr.runs WHERE id = $1`, id).
			Scan(&state, &kind, &msg); err != nil {
			t.Fatal(err)
		}
		if state != "failed" || kind != string(events.KindBudgetExhausted) || !strings.Contains(msg, "$1.00 per month (UTC) was reached: $1.10 spent") {
			t.Errorf("run %s ended %s %s %q, want failed budget_exhausted naming the budget and the spend", id, state, kind, msg)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if st := s.run(b1.RunID).State; st.Terminal() {
		t.Errorf("tenant B's run is %s: another tenant's budget stopped it", st)
	}
	if r := s.run(held.RunID); r.DispatchedAt != nil || r.State != events.RunQueued {
		t.Errorf("a3 is %s (dispatched %v) while the budget is spent, want held", r.State, r.DispatchedAt)
	}
	setBudget(t, s, a, events.Budget{Unit: events.BudgetUSD, Period: events.PeriodMonth, Limit: 5})
	s.waitFor("a3 is admitted once the budget is raised", func() bool { return s.run(held.RunID).DispatchedAt != nil })
}

// TestBadBudgetsAreRefused: an unknown unit or period, a negative, fractional
// or endless limit, or a NUL byte is a 400 naming the field, and nothing
// is stored.
func TestBadBudgetsAreRefused(t *testing.T) {
	s := startAdmission(t, testConfig())
	a := newParty()
	tests := []struct {
		give  events.Budget
		field string
	}{
		{events.Budget{Unit: "euros", Period: events.PeriodDay, Limit: 1}, "unit"},
		{events.Budget{Unit: "tokens\x00", Period: events.PeriodDay, Limit: 1}, "unit"},
		{events.Budget{Unit: events.BudgetTokens, Period: "fortnight", Limit: 1}, "period"},
		{events.Budget{Unit: events.BudgetTokens, Period: "day\x00", Limit: 1}, "period"},
		{events.Budget{Unit: events.BudgetTokens, Period: events.PeriodDay, Limit: -1}, "limit"},
		{events.Budget{Unit: events.BudgetUSD, Period: events.PeriodDay, Limit: -0.01}, "limit"},
		{events.Budget{Unit: events.BudgetTokens, Period: events.PeriodDay, Limit: 10.5}, "limit"},
		{events.Budget{Unit: events.BudgetTokens, Period: events.PeriodDay, Limit: math.Inf(1)}, "limit"},
		{events.Budget{Unit: events.BudgetUSD, Period: events.PeriodDay, Limit: math.NaN()}, "limit"},
	}
	for _, tt := range tests {
		err := SetTenantBudget(s.ctx, s.db, a.TenantID, tt.give, false, audit.Operator)
		var apiErr *events.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.HasPrefix(apiErr.Message, tt.field+":") {
			t.Errorf("SetTenantBudget(%+v) = %v, want a 400 naming %s", tt.give, err, tt.field)
		}
	}
	if err := SetTenantBudget(s.ctx, s.db, "not-a-tenant", events.Budget{Unit: events.BudgetUSD, Period: events.PeriodDay}, false, audit.Operator); err == nil {
		t.Error("a budget for a tenant id that is not one was stored")
	}
	got, err := TenantBudgets(s.ctx, s.db, a.TenantID)
	if err != nil || len(got) != 0 {
		t.Errorf("after the refusals the tenant has %v (%v), want no budget", got, err)
	}
}

// TestBudgetChangesAreAudited: setting, changing and removing a budget each
// leave an entry with the operator as actor and the budget before and
// after; removing one that does not exist changes nothing and records
// nothing.
func TestBudgetChangesAreAudited(t *testing.T) {
	s := startAdmission(t, testConfig())
	a := newParty()
	day := events.Budget{Unit: events.BudgetTokens, Period: events.PeriodDay, Limit: 1000}
	setBudget(t, s, a, day)
	day.Limit = 2000
	setBudget(t, s, a, day)
	if err := SetTenantBudget(s.ctx, s.db, a.TenantID, day, true, audit.Operator); err != nil {
		t.Fatal(err)
	}
	if err := SetTenantBudget(s.ctx, s.db, a.TenantID, day, true, audit.Operator); err != nil {
		t.Fatal(err)
	}
	admin := a.Caller
	admin.Role = "admin"
	var page events.AuditPage
	if err := s.try(events.OpAuditList, events.AuditQuery{Caller: admin}, &page); err != nil {
		t.Fatal(err)
	}
	want := []struct{ action, before, after string }{
		{"budget.delete", `{"unit":"tokens","period":"day","limit":2000}`, "null"},
		{"budget.set", `{"unit":"tokens","period":"day","limit":1000}`, `{"unit":"tokens","period":"day","limit":2000}`},
		{"budget.set", "null", `{"unit":"tokens","period":"day","limit":1000}`},
	}
	if len(page.Entries) != len(want) {
		t.Fatalf("%d audit entries, want %d: %+v", len(page.Entries), len(want), page.Entries)
	}
	for i, w := range want {
		e := page.Entries[i]
		if e.Action != w.action || !sameJSON(e.Before, w.before) || !sameJSON(e.After, w.after) || e.Actor.ID != events.AuditOperator ||
			e.Target.Type != "budget" || e.Target.ID != "tokens/day" || e.Service != Name {
			t.Errorf("entry %d = %s %s → %s by %s on %+v, want %s %s → %s by the operator", i, e.Action, e.Before, e.After,
				e.Actor.ID, e.Target, w.action, w.before, w.after)
		}
	}
	var apiErr *events.APIError
	if err := s.try(events.OpAuditList, events.AuditQuery{Caller: a.Caller}, &page); !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
		t.Errorf("a member's audit.list = %v, want 403", err)
	}
	otherAdmin := newParty().Caller
	otherAdmin.Role = "admin"
	var other events.AuditPage
	if err := s.try(events.OpAuditList, events.AuditQuery{Caller: otherAdmin}, &other); err != nil || len(other.Entries) != 0 {
		t.Errorf("another tenant's audit log: %+v %v, want empty", other.Entries, err)
	}
}

// sameJSON reports whether got holds the JSON document want, in any key order.
func sameJSON(got json.RawMessage, want string) bool {
	var g, w any
	return json.Unmarshal(got, &g) == nil && json.Unmarshal([]byte(want), &w) == nil && reflect.DeepEqual(g, w)
}
