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
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
)

// Usage describes the subcommands.
const Usage = `usage: clopen admin <command> [flags]   (acts on DATABASE_URL directly)

commands:
  create-tenant --slug SLUG --name NAME
  create-user   --tenant SLUG --email EMAIL --name NAME [--role admin|member]
  create-key    --tenant SLUG --email EMAIL [--name NAME]   prints the key once
  list-tenants
  rotate-key    re-seal every engine credential with a new master key
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
	if err := pgdb.Check(ctx, db, gateway.Schema); err != nil {
		return err
	}
	return run(ctx, db, stdout)
}

// command declares its flags on fs and returns what runs once they are
// parsed.
type command func(fs *flag.FlagSet) func(ctx context.Context, db *pgxpool.Pool, out io.Writer) error

var commands = map[string]command{
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

// required reports the first empty flag among name/value pairs.
func required(cmd string, kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			return fmt.Errorf("admin %s: --%s is required", cmd, kv[i])
		}
	}
	return nil
}
