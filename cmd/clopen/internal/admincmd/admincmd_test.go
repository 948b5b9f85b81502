package admincmd

import (
	"context"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/gateway"
	"clopen.dev/services/streammgr"
)

func TestAdminCommands(t *testing.T) {
	url := pgtest.NewURL(t)
	ctx := context.Background()
	db, err := pgdb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []pgdb.Schema{gateway.Schema, streammgr.Schema} {
		if _, err := pgdb.Migrate(ctx, db, s, logging.Discard()); err != nil {
			t.Fatal(err)
		}
	}
	env := func(k string) string {
		if k == "DATABASE_URL" {
			return url
		}
		return ""
	}
	run := func(args ...string) (string, error) {
		var out, errs strings.Builder
		err := Run(ctx, args, env, &out, &errs)
		return out.String() + errs.String(), err
	}

	tests := []struct {
		give    []string
		want    string
		wantErr string
	}{
		{[]string{"create-tenant", "--slug", "acme", "--name", "Acme Inc"}, "created tenant acme (Acme Inc)", ""},
		{[]string{"create-tenant", "--slug", "acme"}, "", "already exists"},
		{[]string{"create-tenant"}, "", "--slug is required"},
		{[]string{"create-user", "--tenant", "acme", "--email", "ada@acme.test", "--name", "Ada", "--role", "admin"}, "created admin ada@acme.test", ""},
		{[]string{"create-user", "--tenant", "nope", "--email", "x@y.z", "--name", "X"}, "", "not found"},
		{[]string{"create-key", "--tenant", "acme", "--email", "ada@acme.test", "--name", "ci"}, "clp_", ""},
		{[]string{"create-key", "--tenant", "acme", "--email", "bob@acme.test"}, "", "not found"},
		{[]string{"list-tenants"}, "acme", ""},
		{[]string{"tenant-limits", "--tenant", "acme"}, "max-concurrent default, max-queued default", ""},
		{[]string{"tenant-limits", "--tenant", "acme", "--max-concurrent", "2"}, "max-concurrent 2, max-queued default", ""},
		{[]string{"tenant-limits", "--tenant", "acme", "--max-queued", "10"}, "max-concurrent 2, max-queued 10", ""},
		{[]string{"tenant-limits", "--tenant", "acme", "--max-concurrent", "default"}, "max-concurrent default, max-queued 10", ""},
		{[]string{"tenant-limits", "--tenant", "acme", "--max-concurrent", "0"}, "", "out of range"},
		{[]string{"tenant-limits", "--tenant", "acme", "--max-queued", "many"}, "", "want a number or default"},
		{[]string{"tenant-limits", "--tenant", "nope"}, "", "not found"},
		{[]string{"tenant-budget", "--tenant", "acme"}, "tenant acme: no budget", ""},
		{[]string{"tenant-budget", "--tenant", "acme", "--period", "day", "--tokens", "500000"}, "500,000 tokens per day (UTC)", ""},
		{[]string{"tenant-budget", "--tenant", "acme", "--usd", "12.5"}, "$12.50 per month (UTC)", ""},
		{[]string{"tenant-budget", "--tenant", "acme"}, "0 tokens", ""},
		{[]string{"tenant-budget", "--tenant", "acme", "--period", "day", "--tokens", "off"}, "$12.50 per month", ""},
		{[]string{"tenant-budget", "--tenant", "acme", "--tokens", "-5"}, "", "limit: -5 is negative"},
		{[]string{"tenant-budget", "--tenant", "acme", "--tokens", "1.5"}, "", "want a whole number"},
		{[]string{"tenant-budget", "--tenant", "acme", "--usd", "NaN"}, "", "limit:"},
		{[]string{"tenant-budget", "--tenant", "acme", "--usd", "inf"}, "", "limit:"},
		{[]string{"tenant-budget", "--tenant", "acme", "--usd", "lots"}, "", "want an amount of US dollars"},
		{[]string{"tenant-budget", "--tenant", "acme", "--period", "fortnight", "--usd", "1"}, "", "period: \"fortnight\" is not a budget period"},
		{[]string{"tenant-budget", "--tenant", "acme", "--period", "day\x00", "--usd", "1"}, "", "is not a budget period"},
		{[]string{"tenant-budget", "--tenant", "nope"}, "", "not found"},
		{[]string{"frobnicate"}, "", "unknown command"},
		{[]string{"list-tenants", "extra"}, "", "unexpected argument"},
	}
	for _, tt := range tests {
		out, err := run(tt.give...)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("admin %v = %v, want error containing %q", tt.give, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || !strings.Contains(out, tt.want)):
			t.Errorf("admin %v = %q, %v; want output containing %q", tt.give, out, err, tt.want)
		}
	}
	if err := Run(ctx, []string{"list-tenants"}, func(string) string { return "" }, &strings.Builder{}, &strings.Builder{}); err == nil ||
		!strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("without DATABASE_URL: %v", err)
	}
}
