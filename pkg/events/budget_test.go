package events

import (
	"testing"
	"time"
)

func TestBudgetPeriodBounds(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		period           BudgetPeriod
		give             string
		wantFrom, wantTo string
	}{
		{PeriodDay, "2025-06-03T23:59:59Z", "2025-06-03T00:00:00Z", "2025-06-04T00:00:00Z"},
		{PeriodDay, "2025-06-04T00:00:00Z", "2025-06-04T00:00:00Z", "2025-06-05T00:00:00Z"},
		// 01:30 at +02:00 is still the previous day in UTC.
		{PeriodDay, "2025-06-04T01:30:00+02:00", "2025-06-03T00:00:00Z", "2025-06-04T00:00:00Z"},
		{PeriodWeek, "2025-06-04T12:00:00Z", "2025-06-02T00:00:00Z", "2025-06-09T00:00:00Z"}, // a Wednesday
		{PeriodWeek, "2025-06-08T23:00:00Z", "2025-06-02T00:00:00Z", "2025-06-09T00:00:00Z"}, // Sunday ends the week
		{PeriodWeek, "2025-06-09T00:00:00Z", "2025-06-09T00:00:00Z", "2025-06-16T00:00:00Z"}, // Monday starts one
		{PeriodWeek, "2025-01-01T08:00:00Z", "2024-12-30T00:00:00Z", "2025-01-06T00:00:00Z"}, // across a year
		{PeriodMonth, "2025-02-28T23:59:59Z", "2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"},
		{PeriodMonth, "2024-12-31T12:00:00Z", "2024-12-01T00:00:00Z", "2025-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		from, to := tt.period.Bounds(at(tt.give))
		if !from.Equal(at(tt.wantFrom)) || !to.Equal(at(tt.wantTo)) {
			t.Errorf("%s.Bounds(%s) = %s, %s, want %s, %s", tt.period, tt.give, from, to, tt.wantFrom, tt.wantTo)
		}
	}
}

func TestBudgetSummary(t *testing.T) {
	start := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	s := BudgetState{Budget: Budget{Unit: BudgetTokens, Period: PeriodMonth, Limit: 1_000_000}, Spent: 1_003_412,
		PeriodStart: start, ResetsAt: start.AddDate(0, 1, 0), Exhausted: true}
	want := "the tenant's budget of 1,000,000 tokens per month (UTC) was reached: 1,003,412 tokens spent since " +
		"2025-06-01T00:00:00Z; it resets at 2025-07-01T00:00:00Z"
	if got := s.Summary(); got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	usd := Budget{Unit: BudgetUSD, Period: PeriodDay, Limit: 12.5}
	if got := usd.Describe(); got != "$12.50 per day (UTC)" {
		t.Errorf("Describe() = %q", got)
	}
	for give, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567"} {
		if got := group(give); got != want {
			t.Errorf("group(%d) = %q, want %q", give, got, want)
		}
	}
}
