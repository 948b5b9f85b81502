// Package busauth gives each Clopen service its own identity on NATS and
// the subjects that identity may use: a service publishes and subscribes
// only what its role needs, only the owner of a stream or bucket manages it,
// and no identity of a service can subscribe to `>` or read another
// service's replies.
//
// One table (grants) is the source of truth for the embedded server of
// `clopen dev` (Users) and for the server configuration that compose and
// Kubernetes ship (ServerConfig, written to deploy/nats/nats.conf).
package busauth

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
)

// Role is a service's identity on the bus; the NATS user name is the role.
type Role string

// The roles. Operator is not a service: it is the identity of a person or
// a test that inspects the bus (full access), never given to a service.
const (
	Gateway   Role = "gateway"
	Streammgr Role = "streammgr"
	Worker    Role = "engine-worker"
	Artifacts Role = "artifacts"
	Bridge    Role = "mcp-bridge"
	Operator  Role = "operator"
)

// Roles lists every role, services first.
var Roles = []Role{Gateway, Streammgr, Worker, Artifacts, Bridge, Operator}

// Environment variables a standalone service reads to authenticate.
const (
	EnvUser     = "CLOPEN_NATS_USER"     // default: the service's role
	EnvPassword = "CLOPEN_NATS_PASSWORD" // empty: connect without authenticating
)

// ResponseWindow is how long a service may answer a request it received:
// the reply subject is allowed once, for this long. A service request's
// deadline is usually seconds; an engine call (a generated commit message)
// can take minutes.
const ResponseWindow = time.Hour

// InboxPrefix is where a role's replies arrive. Each role has its own, so
// one service cannot subscribe to the replies of another (a worker reading
// the gateway's answers).
func InboxPrefix(r Role) string { return "_INBOX." + string(r) }

// Grant is what a role may publish and subscribe to.
type Grant struct {
	Publish    []string
	Subscribe  []string
	DenyPub    []string
	Responds   bool // it serves requests: it may answer on their reply subjects
	FullAccess bool
}

// micro service subjects: svc.<op> endpoints are listed by the role; these
// are the $SRV discovery subjects of a service named name.
func serves(name string) []string {
	return []string{"$SRV.*", "$SRV.*." + name, "$SRV.*." + name + ".*"}
}

// A stream's JetStream API, for the role that declares and manages it
// (no delete: nobody deletes a stream from a service).
func ownsStream(s string) []string {
	return []string{
		"$JS.API.STREAM.CREATE." + s, "$JS.API.STREAM.UPDATE." + s, "$JS.API.STREAM.INFO." + s,
		"$JS.API.STREAM.PURGE." + s, "$JS.API.STREAM.MSG.GET." + s, "$JS.API.DIRECT.GET." + s,
		"$JS.API.DIRECT.GET." + s + ".>",
	}
}

// Reading a stream: look it up, fetch messages, and run consumers on it
// (create, pull, acknowledge, delete) — durable or ordered.
func readsStream(s string) []string {
	return []string{
		"$JS.API.STREAM.INFO." + s, "$JS.API.STREAM.MSG.GET." + s, "$JS.API.DIRECT.GET." + s,
		"$JS.API.DIRECT.GET." + s + ".>",
		"$JS.API.CONSUMER.CREATE." + s, "$JS.API.CONSUMER.CREATE." + s + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + s + ".>", "$JS.API.CONSUMER.INFO." + s + ".>",
		"$JS.API.CONSUMER.DELETE." + s + ".>", "$JS.API.CONSUMER.MSG.NEXT." + s + ".>",
		"$JS.API.CONSUMER.UNPIN." + s + ".>", "$JS.ACK." + s + ".>", "$JS.FC." + s + ".>",
	}
}

func kvStream(b string) string { return "KV_" + b }

// A bucket its owner declares, reads and writes.
func ownsKV(b string) []string {
	return append(append(ownsStream(kvStream(b)), readsStream(kvStream(b))...), "$KV."+b+".>")
}

// An object store its owner declares, reads and writes.
func ownsObjects(b string) []string {
	return append(append(ownsStream("OBJ_"+b), readsStream("OBJ_"+b)...), "$O."+b+".>")
}

// A bucket another role declares: read and watched only.
func readsKV(b string) []string { return readsStream(kvStream(b)) }

func svcSubject(service, op string) string { return "svc." + service + "." + op }

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// grants is the table: what each role needs, and nothing else.
var grants = map[Role]Grant{
	// The gateway calls the services for its clients, follows chats (the
	// CHAT stream), lists workers, fans project notifications out, reads
	// the sessions' files for their users and writes the projects' bases
	// (the snapshots object store).
	Gateway: {
		Publish: concat([]string{
			"svc.streammgr.>", "svc." + events.ArtifactsService + ".>", "svc." + events.EngineService + ".>",
			svcSubject(events.MCPBridgeService, events.OpMCPServersProbe),
		}, readsStream(events.StreamChat), readsKV(events.BucketWorkers), ownsObjects(events.BucketSnapshots)),
		// A credential in plain text is for the worker that runs a turn.
		DenyPub: []string{svcSubject(events.ArtifactsService, events.OpAccountsResolve),
			svcSubject(events.ArtifactsService, events.OpSourceCredentialResolve),
			svcSubject(events.ArtifactsService, events.OpMCPServersResolve)},
		Subscribe: []string{"notify.>"},
	},
	// streammgr owns the EVENTS, CHAT and JOBS streams and the run_ctl
	// bucket; it routes events, dispatches jobs, and controls runs.
	Streammgr: {
		Publish: concat([]string{
			events.SubjectChatAll, events.SubjectJobsAll, "ctl.run.>", "notify.>", events.SubjectEventsAll,
			svcSubject(events.ArtifactsService, events.OpExpand),
		}, ownsStream(events.StreamEvents), readsStream(events.StreamEvents), ownsStream(events.StreamChat),
			readsStream(events.StreamChat), ownsStream(events.StreamJobs), ownsKV(events.BucketRunCtl),
			readsKV(events.BucketRunOwner), readsKV(events.BucketWorkers)),
		Subscribe: concat([]string{"svc.streammgr.>"}, serves("streammgr")),
		Responds:  true,
	},
	// A worker takes jobs, publishes its runs' events, answers its runs'
	// control requests and its engines' catalog, resolves credentials, and
	// keeps the sessions' snapshots.
	Worker: {
		Publish: concat([]string{
			events.SubjectEventsAll,
			svcSubject(events.ArtifactsService, events.OpContent),
			svcSubject(events.ArtifactsService, events.OpAccountsResolve),
			svcSubject(events.ArtifactsService, events.OpSourceCredentialResolve),
		}, readsStream(events.StreamJobs), ownsKV(events.BucketRunOwner), ownsKV(events.BucketWorkers),
			ownsObjects(events.BucketSnapshots),
			readsKV(events.BucketRunCtl), readsKV(events.BucketArtifactRev)),
		Subscribe: concat([]string{"ctl.run.*.*", "svc." + events.EngineService + ".>"}, serves("engine-worker")),
		Responds:  true,
	},
	// artifacts serves its API and owns the artifact_rev bucket.
	Artifacts: {
		Publish:   ownsKV(events.BucketArtifactRev),
		Subscribe: concat([]string{"svc." + events.ArtifactsService + ".>"}, serves(events.ArtifactsService)),
		Responds:  true,
	},
	// The MCP bridge reads which runs are live (the run_owner bucket), asks
	// the worker of a run to serve that run's ask and notify tools, and
	// resolves the external MCP servers it reaches for a run, their
	// secrets in clear.
	Bridge: {
		Publish: concat([]string{"ctl.run.*." + events.VerbAsk, "ctl.run.*." + events.VerbNotify,
			svcSubject(events.ArtifactsService, events.OpMCPServersResolve)}, readsKV(events.BucketRunOwner)),
		Subscribe: concat([]string{"svc.mcpbridge.>"}, serves("mcpbridge")),
		Responds:  true,
	},
	Operator: {FullAccess: true},
}

// GrantOf returns a role's grant, its inbox included.
func GrantOf(r Role) (Grant, error) {
	g, ok := grants[r]
	if !ok {
		return Grant{}, fmt.Errorf("busauth: unknown role %q", r)
	}
	if !g.FullAccess {
		g.Subscribe = append(append([]string(nil), g.Subscribe...), InboxPrefix(r)+".>")
		if usesJetStream(g) {
			// The account's JetStream limits, which declaring a bucket reads.
			g.Publish = append(append([]string(nil), g.Publish...), "$JS.API.INFO")
		}
	}
	return g, nil
}

func usesJetStream(g Grant) bool {
	return slices.ContainsFunc(g.Publish, func(s string) bool {
		return strings.HasPrefix(s, "$JS.") || strings.HasPrefix(s, "$KV.")
	})
}

// permissions is a grant as the server enforces it.
func (g Grant) permissions() *server.Permissions {
	if g.FullAccess {
		return nil
	}
	p := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: unique(g.Publish), Deny: unique(g.DenyPub)},
		Subscribe: &server.SubjectPermission{Allow: unique(g.Subscribe)},
	}
	if len(p.Publish.Allow) == 0 {
		// An empty allow list means "everything"; a role that publishes
		// nothing of its own gets a subject nobody uses.
		p.Publish.Allow = []string{"_CLOPEN.NOTHING"}
	}
	if g.Responds {
		p.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: ResponseWindow}
	}
	return p
}

// unique is subjects sorted, each once (a stream's owner also reads it).
func unique(subjects []string) []string {
	s := append([]string(nil), subjects...)
	sort.Strings(s)
	return slices.Compact(s)
}

// Passwords maps each role to its password.
type Passwords map[Role]string

// NewPasswords makes a random password for every role: what `clopen dev`
// gives its embedded server and its services at each start.
func NewPasswords() Passwords {
	p := Passwords{}
	for _, r := range Roles {
		var b [24]byte
		_, _ = rand.Read(b[:])
		p[r] = hex.EncodeToString(b[:])
	}
	return p
}

// Users are the server-side accounts for an embedded server.
func Users(pw Passwords) ([]*server.User, error) {
	var users []*server.User
	for _, r := range Roles {
		if pw[r] == "" {
			continue
		}
		g, err := GrantOf(r)
		if err != nil {
			return nil, err
		}
		users = append(users, &server.User{Username: string(r), Password: pw[r], Permissions: g.permissions()})
	}
	return users, nil
}

// Options are the client options for role with password: its user, and
// its own inbox prefix (always, so that a service's replies arrive where
// its grant lets it read them).
func Options(r Role, password string) []nats.Option {
	opts := []nats.Option{nats.CustomInboxPrefix(InboxPrefix(r))}
	if password != "" {
		opts = append(opts, nats.UserInfo(string(r), password))
	}
	return opts
}

// FromEnv is Options for a standalone service, from EnvUser (default: the
// role) and EnvPassword.
func FromEnv(r Role, getenv func(string) string) []nats.Option {
	if u := getenv(EnvUser); u != "" {
		r = Role(u)
	}
	return Options(r, getenv(EnvPassword))
}

// ServerConfig is the `authorization` block of a nats-server configuration
// with every role's grant; each password is the environment variable
// CLOPEN_NATS_PASSWORD_<ROLE> of the server (nats-server expands $VAR).
func ServerConfig() string {
	var b strings.Builder
	b.WriteString("# Generated by `clopen admin nats-config` from pkg/platform/busauth: edit the grants there.\n")
	b.WriteString("authorization {\n  users = [\n")
	for _, r := range Roles {
		g, _ := GrantOf(r)
		fmt.Fprintf(&b, "    {\n      user: %q\n      password: $%s\n", r, PasswordVar(r))
		if p := g.permissions(); p != nil {
			b.WriteString("      permissions: {\n")
			writePerm(&b, "        ", "publish", p.Publish, false)
			writePerm(&b, "        ", "subscribe", p.Subscribe, false)
			if p.Response != nil {
				fmt.Fprintf(&b, "        allow_responses: { max: %d, expires: %q }\n", p.Response.MaxMsgs, p.Response.Expires.String())
			}
			b.WriteString("      }\n")
		}
		b.WriteString("    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// HelmValues is the same configuration as values for the official NATS
// Helm chart: the users under config.merge.authorization, each password
// read from the Kubernetes secret named secret (key PasswordVar(role)) into
// the server container's environment.
func HelmValues(secret string) string {
	var b strings.Builder
	b.WriteString("# Generated by `clopen admin nats-config --helm` from pkg/platform/busauth: edit the grants there.\n")
	b.WriteString("# helm install nats nats/nats -n clopen -f nats-values.yaml -f nats-auth-values.yaml\n")
	b.WriteString("config:\n  merge:\n    authorization:\n      users:\n")
	for _, r := range Roles {
		g, _ := GrantOf(r)
		fmt.Fprintf(&b, "        - user: %q\n          password: \"<< $%s >>\"\n", r, PasswordVar(r))
		if p := g.permissions(); p != nil {
			b.WriteString("          permissions:\n")
			writePerm(&b, "            ", "publish", p.Publish, true)
			writePerm(&b, "            ", "subscribe", p.Subscribe, true)
			if p.Response != nil {
				fmt.Fprintf(&b, "            allow_responses: {max: %d, expires: %q}\n", p.Response.MaxMsgs, p.Response.Expires.String())
			}
		}
	}
	b.WriteString("container:\n  env:\n")
	for _, r := range Roles {
		fmt.Fprintf(&b, "    %s:\n      valueFrom: {secretKeyRef: {name: %s, key: %s}}\n", PasswordVar(r), secret, PasswordVar(r))
	}
	return b.String()
}

// writePerm writes one permission, its allow list and, when there is one,
// its deny list, at indent: as a nats-server block (key: { ... }) or, for
// YAML, as a mapping (key:).
func writePerm(b *strings.Builder, indent, key string, p *server.SubjectPermission, yaml bool) {
	if yaml {
		fmt.Fprintf(b, "%s%s:\n", indent, key)
	} else {
		fmt.Fprintf(b, "%s%s: {\n", indent, key)
	}
	for _, l := range []struct {
		kind     string
		subjects []string
	}{{"allow", p.Allow}, {"deny", p.Deny}} {
		if len(l.subjects) > 0 {
			fmt.Fprintf(b, "%s  %s: [", indent, l.kind)
			writeQuoted(b, l.subjects)
			b.WriteString("]\n")
		}
	}
	if !yaml {
		b.WriteString(indent + "}\n")
	}
}

// writeQuoted writes subjects sorted, quoted and comma-separated (a
// quoted string is the same in nats-server's configuration and in YAML).
func writeQuoted(b *strings.Builder, subjects []string) {
	for i, x := range unique(subjects) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "%q", x)
	}
}

// PasswordsFromEnv reads every role's password from PasswordVar(role):
// all of them, or none (nil: an open bus).
func PasswordsFromEnv(getenv func(string) string) (Passwords, error) {
	p := Passwords{}
	var missing []string
	for _, r := range Roles {
		if v := getenv(PasswordVar(r)); v != "" {
			p[r] = v
		} else {
			missing = append(missing, PasswordVar(r))
		}
	}
	switch len(missing) {
	case len(Roles):
		return nil, nil
	case 0:
		return p, nil
	}
	return nil, fmt.Errorf("busauth: some bus passwords are set but not %s (`clopen admin nats-passwords` makes them all)",
		strings.Join(missing, ", "))
}

// EnvFile writes p as NAME=value lines, one per role: an env file for
// docker compose or `kubectl create secret generic --from-env-file`.
func (p Passwords) EnvFile() string {
	var b strings.Builder
	for _, r := range Roles {
		fmt.Fprintf(&b, "%s=%s\n", PasswordVar(r), p[r])
	}
	return b.String()
}

// PasswordVar is the server-side environment variable holding a role's
// password in the shipped configuration.
func PasswordVar(r Role) string {
	return "CLOPEN_NATS_PASSWORD_" + strings.ToUpper(strings.ReplaceAll(string(r), "-", "_"))
}
