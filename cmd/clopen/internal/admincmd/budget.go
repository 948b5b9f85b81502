package admincmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/streammgr"
)

// tenantBudget is `clopen admin tenant-budget`: without --tokens or --usd
// it shows the tenant's budgets with this period's spend; with one (or
// both) it sets the budget of that unit for --period, "off" removing it.
// Each change is in the tenant's audit log as the operator's.
func tenantBudget(fs *flag.FlagSet) func(context.Context, *pgxpool.Pool, io.Writer) error {
	tenant := fs.String("tenant", "", "the tenant's slug")
	period := fs.String("period", string(events.PeriodMonth), "day, week (from Monday) or month: calendar periods in UTC")
	tokens := fs.String("tokens", "", "input, output and cache-write tokens the tenant may spend per period (a whole number), or off")
	usd := fs.String("usd", "", "US dollars the tenant may spend per period, or off")
	return func(ctx context.Context, db *pgxpool.Pool, out io.Writer) error {
		if err := required("tenant-budget", "tenant", *tenant); err != nil {
			return err
		}
		id, err := tenantID(ctx, db, *tenant)
		if err != nil {
			return err
		}
		for _, set := range []struct {
			unit  events.BudgetUnit
			value string
		}{{events.BudgetTokens, *tokens}, {events.BudgetUSD, *usd}} {
			if set.value == "" {
				continue
			}
			b := events.Budget{Unit: set.unit, Period: events.BudgetPeriod(*period)}
			remove := set.value == "off"
			if !remove {
				if b.Limit, err = budgetFlag(set.unit, set.value); err != nil {
					return err
				}
			}
			if err := streammgr.SetTenantBudget(ctx, db, id, b, remove, audit.Operator); err != nil {
				return fmt.Errorf("admin tenant-budget: %w", err)
			}
		}
		states, err := streammgr.TenantBudgets(ctx, db, id)
		if err != nil {
			return err
		}
		if len(states) == 0 {
			fmt.Fprintf(out, "tenant %s: no budget\n", *tenant)
			return nil
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "tenant %s\nBUDGET\tSPENT\tSINCE\tRESETS\tSTATE\n", *tenant)
		for _, s := range states {
			state := "ok"
			if s.Exhausted {
				state = "spent: sends refused, running turns stopped"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Describe(), s.Amount(s.Spent), s.PeriodStart.Format(time.RFC3339),
				s.ResetsAt.Format(time.RFC3339), state)
		}
		return tw.Flush()
	}
}

// budgetFlag parses the value of --tokens (a whole number) or --usd.
func budgetFlag(unit events.BudgetUnit, v string) (float64, error) {
	if unit == events.BudgetTokens {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("admin tenant-budget: --tokens %q: want a whole number of tokens or off", v)
		}
		return float64(n), nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("admin tenant-budget: --usd %q: want an amount of US dollars such as 25 or 12.50, or off", v)
	}
	return f, nil
}
