package busauth_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/embeddednats"
)

// bus is an embedded server that enforces every role's grant.
type bus struct {
	t  *testing.T
	ns *server.Server
	pw busauth.Passwords
}

func startBus(t *testing.T) *bus {
	t.Helper()
	pw := busauth.NewPasswords()
	users, err := busauth.Users(pw)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := embeddednats.Start(embeddednats.Config{StoreDir: t.TempDir(), Users: users})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return &bus{t: t, ns: ns, pw: pw}
}

// client is one connection with the asynchronous errors the server sent it.
type client struct {
	*nats.Conn
	mu   sync.Mutex
	errs []error
}

func (c *client) violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, err := range c.errs {
		if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(err.Error(), "Permissions Violation") {
			out = append(out, err.Error())
		}
	}
	return out
}

func (b *bus) connect(role busauth.Role, password string) (*client, error) {
	c := &client{}
	nc, err := nats.Connect(b.ns.ClientURL(), append(busauth.Options(role, password),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.mu.Lock()
			c.errs = append(c.errs, err)
			c.mu.Unlock()
		}))...)
	if err != nil {
		return nil, err
	}
	b.t.Cleanup(nc.Close)
	c.Conn = nc
	return c, nil
}

func (b *bus) as(role busauth.Role) *client {
	b.t.Helper()
	c, err := b.connect(role, b.pw[role])
	if err != nil {
		b.t.Fatalf("connect as %s: %v", role, err)
	}
	return c
}

// refusedPublish checks that role's publish to subject is refused: the
// server reports the violation to the sender and an operator listening on
// the subject receives nothing.
func (b *bus) refusedPublish(role busauth.Role, subject string) {
	b.t.Helper()
	watch := b.as(busauth.Operator)
	sub, err := watch.SubscribeSync(subject)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		b.t.Fatal(err)
	}
	c := b.as(role)
	if err := c.Publish(subject, []byte(`{"tenantId":"victim"}`)); err != nil {
		b.t.Fatal(err)
	}
	_ = c.Flush()
	waitViolation(b.t, c, role, "publish to "+subject)
	if msg, err := sub.NextMsg(200 * time.Millisecond); err == nil {
		b.t.Errorf("%s published %s and it arrived: %s", role, subject, msg.Data)
	}
}

// refusedSubscribe checks that role cannot subscribe to subject: the
// server reports it, and a message an operator publishes there does not
// reach role.
func (b *bus) refusedSubscribe(role busauth.Role, subject, probe string) {
	b.t.Helper()
	c := b.as(role)
	sub, err := c.SubscribeSync(subject)
	if err != nil {
		b.t.Fatal(err)
	}
	_ = c.Flush()
	waitViolation(b.t, c, role, "subscribe to "+subject)
	op := b.as(busauth.Operator)
	if err := op.Publish(probe, []byte("secret")); err != nil {
		b.t.Fatal(err)
	}
	_ = op.Flush()
	if msg, err := sub.NextMsg(200 * time.Millisecond); err == nil {
		b.t.Errorf("%s subscribed to %s and read %s", role, subject, msg.Subject)
	}
}

func waitViolation(t *testing.T, c *client, role busauth.Role, what string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if len(c.violations()) > 0 {
			return
		}
	}
	t.Errorf("%s: %s was not refused by the server", role, what)
}

// services are the roles a service is given: all but the Operator.
var services = slices.DeleteFunc(slices.Clone(busauth.Roles), func(r busauth.Role) bool { return r == busauth.Operator })

// others are the services not among allowed: those a case is tried with.
func others(allowed ...busauth.Role) []busauth.Role {
	return slices.DeleteFunc(slices.Clone(services), func(r busauth.Role) bool { return slices.Contains(allowed, r) })
}

// TestForgeriesAreRefused is every forgery found by trying the open bus as
// an attacker, made with each service identity that has no business
// making it.
func TestForgeriesAreRefused(t *testing.T) {
	b := startBus(t)
	resolve := "svc." + events.ArtifactsService + "." + events.OpAccountsResolve
	cases := []struct {
		name    string
		subject string
		allowed []busauth.Role
	}{
		{"resolve a tenant's credential", resolve, []busauth.Role{busauth.Worker}},
		{"resolve a project's repository credential", "svc." + events.ArtifactsService + "." + events.OpSourceCredentialResolve, []busauth.Role{busauth.Worker}},
		{"resolve an MCP server's secrets", "svc." + events.ArtifactsService + "." + events.OpMCPServersResolve, []busauth.Role{busauth.Bridge}},
		{"probe an MCP server", "svc." + events.MCPBridgeService + "." + events.OpMCPServersProbe, []busauth.Role{busauth.Gateway}},
		{"start a turn", "svc.streammgr.start", []busauth.Role{busauth.Gateway}},
		{"cancel a run", "ctl.run.r1.cancel", []busauth.Role{busauth.Streammgr}},
		{"rewrite instructions", "svc.artifacts.instructions.put", []busauth.Role{busauth.Gateway}},
		{"events on a run", "ev.victim.r1", []busauth.Role{busauth.Worker, busauth.Streammgr}},
		{"chat events", "chat.victim.s1", []busauth.Role{busauth.Streammgr}},
		{"a job", "job.claude", []busauth.Role{busauth.Streammgr}},
		{"a run's cancel flag", "$KV.run_ctl.r1", []busauth.Role{busauth.Streammgr}},
		{"a run's owner", "$KV.run_owner.r1", []busauth.Role{busauth.Worker}},
		{"a worker's heartbeat", "$KV.workers.w1", []busauth.Role{busauth.Worker}},
		{"the artifact revision", "$KV.artifact_rev.victim", []busauth.Role{busauth.Artifacts}},
		{"delete the jobs stream", "$JS.API.STREAM.DELETE.JOBS", nil},
		{"delete the events stream", "$JS.API.STREAM.DELETE.EVENTS", nil},
		{"purge the events stream", "$JS.API.STREAM.PURGE.EVENTS", []busauth.Role{busauth.Streammgr}},
		{"a consumer on JOBS", "$JS.API.CONSUMER.CREATE.JOBS.x", []busauth.Role{busauth.Worker}},
	}
	for _, c := range cases {
		for _, role := range others(c.allowed...) {
			t.Run(c.name+"/"+string(role), func(t *testing.T) {
				t.Parallel()
				(&bus{t: t, ns: b.ns, pw: b.pw}).refusedPublish(role, c.subject)
			})
		}
	}
}

// TestNoServiceReadsWhatIsNotItsOwn: no identity subscribes to everything,
// to another service's requests or to another service's replies.
func TestNoServiceReadsWhatIsNotItsOwn(t *testing.T) {
	b := startBus(t)
	cases := []struct {
		name, subject, probe string
		allowed              []busauth.Role
	}{
		{"everything", ">", "svc.artifacts.accounts.resolve", nil},
		{"every service request", "svc.>", "svc.streammgr.start", nil},
		{"artifacts' requests", "svc.artifacts.>", "svc.artifacts.accounts.resolve", []busauth.Role{busauth.Artifacts}},
		{"streammgr's requests", "svc.streammgr.>", "svc.streammgr.start", []busauth.Role{busauth.Streammgr}},
		{"the gateway's replies", busauth.InboxPrefix(busauth.Gateway) + ".>", busauth.InboxPrefix(busauth.Gateway) + ".x", []busauth.Role{busauth.Gateway}},
		{"the worker's replies", busauth.InboxPrefix(busauth.Worker) + ".>", busauth.InboxPrefix(busauth.Worker) + ".x", []busauth.Role{busauth.Worker}},
		{"every inbox", "_INBOX.>", "_INBOX.gateway.x", nil},
		{"raw run events", "ev.>", "ev.victim.r1", nil},
		{"jobs", "job.>", "job.claude", nil},
		{"a run's control", "ctl.run.r1.cancel", "ctl.run.r1.cancel", []busauth.Role{busauth.Worker}},
		{"notifications", "notify.>", "notify.victim.p1", []busauth.Role{busauth.Gateway}},
	}
	for _, c := range cases {
		for _, role := range others(c.allowed...) {
			t.Run(c.name+"/"+string(role), func(t *testing.T) {
				t.Parallel()
				(&bus{t: t, ns: b.ns, pw: b.pw}).refusedSubscribe(role, c.subject, c.probe)
			})
		}
	}
}

// TestJetStreamManagementIsTheOwners: the JetStream API refuses a stream
// deletion from every service identity, so the streams stay.
func TestJetStreamManagementIsTheOwners(t *testing.T) {
	b := startBus(t)
	op := b.as(busauth.Operator)
	js, _ := jetstream.New(op.Conn)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamJobs, Subjects: []string{events.SubjectJobsAll}}); err != nil {
		t.Fatal(err)
	}
	for _, role := range services {
		c := b.as(role)
		cjs, _ := jetstream.New(c.Conn)
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		err := cjs.DeleteStream(dctx, events.StreamJobs)
		cancel()
		if err == nil {
			t.Errorf("%s deleted the JOBS stream", role)
		}
	}
	if _, err := js.Stream(ctx, events.StreamJobs); err != nil {
		t.Fatalf("JOBS is gone: %v", err)
	}
}

// TestIdentityIsRequired: without a password, with another role's
// password, or as an unknown user, the server refuses the connection.
func TestIdentityIsRequired(t *testing.T) {
	b := startBus(t)
	for name, try := range map[string]func() error{
		"no identity": func() error { _, err := b.connect(busauth.Worker, ""); return err },
		"another role's password": func() error {
			_, err := b.connect(busauth.Worker, b.pw[busauth.Gateway])
			return err
		},
		"an unknown user": func() error { _, err := b.connect("intruder", b.pw[busauth.Operator]); return err },
	} {
		if err := try(); !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s: connect answered %v, want an authorization error", name, err)
		}
	}
}

// TestServerConfigMatchesTheGrants parses the shipped configuration the
// way nats-server does and compares every user's permissions with the
// ones the embedded server enforces.
func TestServerConfigMatchesTheGrants(t *testing.T) {
	pw := busauth.Passwords{}
	for _, r := range busauth.Roles {
		pw[r] = "pw-" + string(r)
		t.Setenv(busauth.PasswordVar(r), pw[r])
	}
	path := t.TempDir() + "/nats.conf"
	if err := os.WriteFile(path, []byte(busauth.ServerConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the configuration: %v", err)
	}
	want, err := busauth.Users(pw)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*server.User{}
	for _, u := range opts.Users {
		got[u.Username] = u
	}
	if len(got) != len(want) {
		t.Fatalf("config has %d users, want %d", len(got), len(want))
	}
	for _, w := range want {
		g := got[w.Username]
		if g == nil || g.Password != w.Password {
			t.Fatalf("user %s: missing or wrong password in the config", w.Username)
		}
		if !samePermissions(g.Permissions, w.Permissions) {
			t.Errorf("user %s: config permissions %+v differ from the grant %+v", w.Username, g.Permissions, w.Permissions)
		}
	}
}
