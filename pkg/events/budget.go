package events

import (
	"fmt"
	"time"
)

// OpBudgets is svc.streammgr.budgets: the caller's tenant's budgets with
// what it spent in each one's current period (BudgetsRequest, BudgetsReply).
const OpBudgets = "budgets"

// BudgetUnit is what a budget limits: tokens or US dollars.
type BudgetUnit string

// The budget units. A token budget counts input, output and cache-write
// tokens; cache reads, which providers bill at a tenth of input or less and
// which every turn of a long conversation repeats, are left out. A dollar
// budget counts the runs' cost.
const (
	BudgetTokens BudgetUnit = "tokens"
	BudgetUSD    BudgetUnit = "usd"
)

// Valid reports whether u is tokens or usd.
func (u BudgetUnit) Valid() bool { return u == BudgetTokens || u == BudgetUSD }

// BudgetPeriod is the calendar period a budget renews with, in UTC.
type BudgetPeriod string

// The budget periods: a UTC day from midnight, an ISO week from Monday
// midnight, a month from the first at midnight.
const (
	PeriodDay   BudgetPeriod = "day"
	PeriodWeek  BudgetPeriod = "week"
	PeriodMonth BudgetPeriod = "month"
)

// BudgetPeriods lists the periods, shortest first.
func BudgetPeriods() []BudgetPeriod { return []BudgetPeriod{PeriodDay, PeriodWeek, PeriodMonth} }

// Valid reports whether p is day, week or month.
func (p BudgetPeriod) Valid() bool { return oneOf(p, BudgetPeriods()) }

// Bounds returns the period holding t: its start and the start of the next,
// in UTC.
func (p BudgetPeriod) Bounds(t time.Time) (start, end time.Time) {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch p {
	case PeriodWeek:
		start = day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7)) // back to Monday
		return start, start.AddDate(0, 0, 7)
	case PeriodMonth:
		start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	return day, day.AddDate(0, 0, 1)
}

// Budget is a limit on what a tenant spends per period. A tenant has at
// most one budget per unit and period; a send is refused, and its running
// turns are stopped, once any of them is spent.
type Budget struct {
	Unit   BudgetUnit   `json:"unit" doc:"tokens (input, output and cache-write tokens; cache reads are not counted) or usd"`
	Period BudgetPeriod `json:"period" doc:"day, week (from Monday) or month, calendar periods in UTC"`
	Limit  float64      `json:"limit" doc:"the most the tenant may spend in one period: a whole number of tokens, or US dollars"`
}

// BudgetState is a budget with what its tenant spent in the current
// period: the runs queued since PeriodStart, each counted by what the model
// proxy metered when it went through one, else what its engine reported
// (while a run goes on, its latest live report).
type BudgetState struct {
	Budget
	Spent       float64   `json:"spent"`
	PeriodStart time.Time `json:"periodStart"`
	ResetsAt    time.Time `json:"resetsAt"`
	Exhausted   bool      `json:"exhausted" doc:"spent has reached limit: sends are refused (402 budget_exhausted) until resetsAt or a higher limit"`
}

// Describe says the budget for people: "5,000 tokens per day (UTC)" or
// "$12.50 per month (UTC)".
func (b Budget) Describe() string { return b.Amount(b.Limit) + " per " + string(b.Period) + " (UTC)" }

// Amount formats v in b's unit: "5,310 tokens", "$0.42".
func (b Budget) Amount(v float64) string {
	if b.Unit == BudgetUSD {
		return fmt.Sprintf("$%.2f", v)
	}
	return group(int64(v)) + " tokens"
}

// Summary says where the tenant stands against a spent budget, for the
// refusal of a send and the error of a stopped turn.
func (s BudgetState) Summary() string {
	return fmt.Sprintf("the tenant's budget of %s was reached: %s spent since %s; it resets at %s",
		s.Describe(), s.Amount(s.Spent), s.PeriodStart.Format(time.RFC3339), s.ResetsAt.Format(time.RFC3339))
}

// group writes n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// BudgetsRequest asks for the caller's tenant's budgets.
type BudgetsRequest struct {
	Caller
}

// BudgetsReply is a tenant's budgets, each with its current period's spend.
type BudgetsReply struct {
	Budgets []BudgetState `json:"budgets"`
}
