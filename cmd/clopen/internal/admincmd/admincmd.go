// Package admincmd is `clopen admin`: operator commands that act on the
// gateway schema directly through DATABASE_URL, with no API key. They are
// for whoever holds the database credentials, and nobody else.
package admincmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/streammgr"
)

// Usage describes the subcommands.
const Usage = `usage: clopen admin <command> [flags]   (acts on DATABASE_URL directly)

commands:
  create-tenant --slug SLUG --name NAME
  create-user   --tenant SLUG --email EMAIL --name NAME [--role admin|member]
  create-key    --tenant SLUG --email EMAIL [--name NAME]   prints the key once
  list-tenants
  tenant-limits --tenant SLUG [--max-concurrent N|default] [--max-queued N|default]
                shows, or sets, the tenant's admission limits (runs at once, runs waiting)
  tenant-budget --tenant SLUG [--period day|week|month] [--tokens N|off] [--usd X|off]
                shows the tenant's budgets and this period's spend, or sets one (calendar periods, UTC)
  rotate-key    re-seal every engine credential with a new master key
  gc-snapshots  [--grace 24h] [--dry-run]   delete the snapshots no run, session or project needs (also needs the bus)
  nats-config   [--helm]   the bus's identities and grants as nats-server config (no database)
  nats-passwords           a new password for each bus identity, as an env file (no database)
  bus-keys                 new key pairs of the bus tokens (caller, dispatch), as an env file (no database)
`

// Run runs one admin subcommand. Output for people goes to stdout; a key
// is printed alone on its own line so scripts can capture it.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, Usage)
		if len(args) == 0 {
			return errors.New("admin: no command given")
		}
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprint(stderr, Usage)
		return fmt.Errorf("admin: unknown command %q", args[0])
	}
	fs := flag.NewFlagSet("clopen admin "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	run := cmd(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("admin %s: unexpected argument %q", args[0], fs.Arg(0))
	}
	url := getenv("DATABASE_URL")
	if url == "" {
		return errors.New("admin: set DATABASE_URL to the Clopen database")
	}
	db, err := pgdb.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range []pgdb.Schema{gateway.Schema, streammgr.Schema} {
		if err := pgdb.Check(ctx, db, s); err != nil {
			return err
		}
	}
	return run(ctx, db, stdout)
}

// command declares its flags on fs and returns what runs once they are
// parsed.
type command func(fs *flag.FlagSet) func(ctx context.Context, db *pgxpool.Pool, out io.Writer) error

var commands = map[string]command{
	"tenant-limits": tenantLimits,
	"tenant-budget": tenantBudget,
	"create-tenant": func(fs *flag.FlagSet) func(context.Context, *pgxpool.Pool, io.Writer) error {
		slug := fs.String("slug", "", "the tenant's unique slug (lower-case letters, digits, -)")
		name := fs.String("name", "", "the tenant's display name")
		return func(ctx context.Context, db *pgxpool.Pool, out io.Writer) error {
			if err := required("create-tenant", "slug", *slug); err != nil {
				return err
			}
			t, err := gateway.CreateTenant(ctx, db, *slug, *name)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "created tenant %s (%s) id %s\n", t.Slug, t.Name, t.ID)
			return nil
		}
	},
	"create-user": func(fs *flag.FlagSet) func(context.Context, *pgxpool.Pool, io.Writer) error {
		tenant := fs.String("tenant", "", "the tenant's slug")
		email := fs.String("email", "", "the user's email, unique in the tenant")
		name := fs.String("name", "", "the user's name")
		role := fs.String("role", api.RoleMember, "admin or member")
		return func(ctx context.Context, db *pgxpool.Pool, out io.Writer) error {
			if err := required("create-user", "tenant", *tenant, "email", *email, "name", *name); err != nil {
				return err
			}
			u, err := gateway.CreateUser(ctx, db, *tenant, api.CreateUser{Email: *email, Name: *name, Role: *role})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "created %s %s (%s) id %s\n", u.Role, u.Email, u.Name, u.ID)
			return nil
		}
	},
	"create-key": func(fs *flag.FlagSet) func(context.Context, *pgxpool.Pool, io.Writer) error {
		tenant := fs.String("tenant", "", "the tenant's slug")
		email := fs.String("email", "", "the user the key acts as")
		name := fs.String("name", "", "a label for the key")
		return func(ctx context.Context, db *pgxpool.Pool, out io.Writer) error {
			if err := required("create-key", "tenant", *tenant, "email", *email); err != nil {
				return err
			}
			k, err := gateway.CreateKey(ctx, db, *tenant, *email, *name)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "API key %s for %s (shown once, store it now):\n%s\n", k.Prefix, *email, k.Key)
			return nil
		}
	},
	"list-tenants": func(fs *flag.FlagSet) func(context.Context, *pgxpool.Pool, io.Writer) error {
		return func(ctx context.Context, db *pgxpool.Pool, out io.Writer) error {
			ts, err := gateway.ListTenants(ctx, db)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SLUG\tNAME\tID\tCREATED")
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Slug, t.Name, t.ID, t.CreatedAt.Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		}
	},
}

// tenantLimits is `clopen admin tenant-limits`: a flag left out keeps the
// tenant's limit, "default" returns it to the default.
func tenantLimits(fs *flag.FlagSet) func(context.Context, *pgxpool.Pool, io.Writer) error {
	tenant := fs.String("tenant", "", "the tenant's slug")
	conc := fs.String("max-concurrent", "", "runs of the tenant dispatched at once (1 to 10000, or default)")
	queued := fs.String("max-queued", "", "runs of the tenant waiting to start (0 to 100000, or default)")
	return func(ctx context.Context, db *pgxpool.Pool, out io.Writer) error {
		if err := required("tenant-limits", "tenant", *tenant); err != nil {
			return err
		}
		id, err := tenantID(ctx, db, *tenant)
		if err != nil {
			return err
		}
		l, err := streammgr.TenantLimitsOf(ctx, db, id)
		if err != nil {
			return err
		}
		if *conc != "" || *queued != "" {
			if l.MaxConcurrent, err = limitFlag("max-concurrent", *conc, l.MaxConcurrent); err != nil {
				return err
			}
			if l.MaxQueued, err = limitFlag("max-queued", *queued, l.MaxQueued); err != nil {
				return err
			}
			if err := streammgr.SetTenantLimits(ctx, db, id, l); err != nil {
				return err
			}
		}
		show := func(v *int) string {
			if v == nil {
				return "default"
			}
			return strconv.Itoa(*v)
		}
		fmt.Fprintf(out, "tenant %s: max-concurrent %s, max-queued %s\n", *tenant, show(l.MaxConcurrent), show(l.MaxQueued))
		return nil
	}
}

// limitFlag parses a limit flag: empty keeps was, "default" is nil.
func limitFlag(name, v string, was *int) (*int, error) {
	switch v {
	case "":
		return was, nil
	case "default":
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("admin tenant-limits: --%s %q: want a number or default", name, v)
	}
	return &n, nil
}

// tenantID finds the id of the tenant with slug.
func tenantID(ctx context.Context, db *pgxpool.Pool, slug string) (string, error) {
	ts, err := gateway.ListTenants(ctx, db)
	if err != nil {
		return "", err
	}
	for _, t := range ts {
		if t.Slug == slug {
			return t.ID, nil
		}
	}
	return "", fmt.Errorf("admin: tenant %q not found", slug)
}

// required reports the first empty flag among name/value pairs.
func required(cmd string, kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			return fmt.Errorf("admin %s: --%s is required", cmd, kv[i])
		}
	}
	return nil
}

// CollectSnapshots runs gc (its Live filled in) over its store, keeping
// what streammgr's runs and sessions and the gateway's projects in db still
// name.
func CollectSnapshots(ctx context.Context, db *pgxpool.Pool, gc snapshot.GC) (snapshot.GCStats, error) {
	gc.Live = func(ctx context.Context, tenant string) (map[string]bool, error) {
		live := map[string]bool{}
		if err := streammgr.LiveSnapshots(ctx, db, tenant, live); err != nil {
			return nil, err
		}
		if err := gateway.LiveSnapshots(ctx, db, tenant, live); err != nil {
			return nil, err
		}
		return live, nil
	}
	return gc.Collect(ctx)
}
