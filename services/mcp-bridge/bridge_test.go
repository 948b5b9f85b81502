package bridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/mcp-bridge/internal/binding"
	"clopen.dev/services/mcp-bridge/internal/ext"
)

// fixture is a bridge on a real JetStream and Postgres, with runs a
// worker holds in the run_owner bucket as a worker would.
type fixture struct {
	url    string
	keys   bustoken.Keys
	db     *pgxpool.Pool
	owners jetstream.KeyValue
}

func newFixture(t *testing.T) *fixture { return newFixtureExt(t, nil) }

// newFixtureExt is a fixture whose external servers' route ends in
// external; nil is the real ext.Handler, resolving over the bus.
func newFixtureExt(t *testing.T, external http.Handler) *fixture {
	t.Helper()
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	ctx := context.Background()
	owners, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: events.BucketRunOwner})
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.New(t, Schema)
	keys := bustoken.Generate()
	if external == nil {
		h := ext.New(ext.Bus{NC: nc}, ext.Options{})
		t.Cleanup(func() { _ = h.Close() })
		external = h
	}
	srv := httptest.NewServer(handler(keys.Verifier(), owners, &tools{db: db, nc: nc, askTimeout: time.Minute}, external))
	t.Cleanup(srv.Close)
	return &fixture{url: srv.URL, keys: keys, db: db, owners: owners}
}

// run is a run a worker holds.
type testRun struct{ tenant, project, session, id string }

func (f *fixture) start(t *testing.T, tenant, project string) testRun {
	t.Helper()
	r := testRun{tenant: tenant, project: project, session: uuid.NewString(), id: uuid.NewString()}
	owner, _ := json.Marshal(events.RunOwner{Worker: "w1", Tenant: tenant, ClaimedAt: time.Now()})
	if _, err := f.owners.Create(context.Background(), r.id, owner); err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) end(t *testing.T, r testRun) {
	t.Helper()
	if err := f.owners.Delete(context.Background(), r.id); err != nil {
		t.Fatal(err)
	}
}

func (r testRun) claims() bustoken.Claims {
	return bustoken.Claims{TenantID: r.tenant, ProjectID: r.project, SessionID: r.session, RunID: r.id, Engine: "pi"}
}

func (f *fixture) token(t *testing.T, r testRun) string {
	return bustokentest.Sign(t, f.keys, bustoken.MCP, r.claims())
}

// connect opens an MCP client session on /mcp whose every request carries
// token.
func (f *fixture) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: withToken{token: token}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: f.url + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type withToken struct{ token string }

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return http.DefaultTransport.RoundTrip(r)
}

// call calls tool and returns its text and whether it is an error result.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestMemoryIsPerTenantAndProject: a note one run writes is read by a
// later run of its project, and by no run of another project or tenant.
func TestMemoryIsPerTenantAndProject(t *testing.T) {
	f := newFixture(t)
	tenant, project := uuid.NewString(), uuid.NewString()
	a := f.start(t, tenant, project)
	cs := f.connect(t, f.token(t, a))
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "ask_user,memory_read,memory_search,memory_write,notify" {
		t.Errorf("tools = %s", got)
	}
	if out, isErr := call(t, cs, "memory_write", map[string]any{"name": "build", "content": "run make check before pushing"}); isErr {
		t.Fatalf("memory_write: %s", out)
	}
	f.end(t, a)

	later := f.connect(t, f.token(t, f.start(t, tenant, project)))
	if out, _ := call(t, later, "memory_read", map[string]any{"name": "build"}); out != "run make check before pushing" {
		t.Errorf("a later run of the project reads %q", out)
	}
	if out, _ := call(t, later, "memory_search", map[string]any{"query": "MAKE"}); !strings.Contains(out, `"name":"build"`) {
		t.Errorf("memory_search = %q", out)
	}

	for name, r := range map[string]testRun{
		"another project of the tenant":            f.start(t, tenant, uuid.NewString()),
		"the same project id under another tenant": f.start(t, uuid.NewString(), project),
	} {
		cs := f.connect(t, f.token(t, r))
		if out, isErr := call(t, cs, "memory_read", map[string]any{"name": "build"}); !isErr || !strings.Contains(out, "no note") {
			t.Errorf("%s: memory_read = %q (error %v), want no such note", name, out, isErr)
		}
		if out, _ := call(t, cs, "memory_search", map[string]any{"query": ""}); out != "No note matches." {
			t.Errorf("%s: memory_search = %q", name, out)
		}
		if out, isErr := call(t, cs, "memory_write", map[string]any{"name": "build", "content": "overwritten"}); isErr {
			t.Errorf("%s: memory_write = %q", name, out)
		}
	}
	if out, _ := call(t, later, "memory_read", map[string]any{"name": "build"}); out != "run make check before pushing" {
		t.Errorf("after other projects wrote their own, the project's note is %q", out)
	}
	var n int
	if err := f.db.QueryRow(context.Background(), `SELECT count(*) FROM mcpbridge.memory WHERE tenant_id = $1 AND project_id = $2`, tenant, project).Scan(&n); err != nil || n != 1 {
		t.Errorf("the project has %d notes (%v), want 1", n, err)
	}
}

// TestRefusals: every request that is not a live run's, with a valid mcp
// token, is refused 401 with a JSON-RPC error, and writes nothing.
func TestRefusals(t *testing.T) {
	f := newFixture(t)
	tenant, project := uuid.NewString(), uuid.NewString()
	a := f.start(t, tenant, project)
	ended := f.start(t, tenant, project)
	f.end(t, ended)
	other := f.start(t, uuid.NewString(), uuid.NewString())

	expiredSigner, err := bustoken.NewSigner(bustoken.MCP, f.keys.MCPKey, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	expired, _ := expiredSigner.SignAt(a.claims(), time.Now().Add(-time.Hour))
	// Run a's claims under another tenant's name: the lease says whose run it is.
	crossed := a.claims()
	crossed.TenantID = other.tenant
	// Run a's token with its project swapped for another's, signature kept.
	good := f.token(t, a)
	payload, sig, _ := strings.Cut(good, ".")
	body, _ := base64Decode(payload)
	reprojected := base64Encode([]byte(strings.Replace(string(body), a.project, uuid.NewString(), 1))) + "." + sig
	noRun := a.claims()
	noRun.RunID = ""

	tests := []struct {
		name, auth, want string
	}{
		{"no token", "", "Bearer"},
		{"not bearer", "Basic " + good, "Bearer"},
		{"garbage", "Bearer abc", "want claims.signature"},
		{"forged: another key", "Bearer " + bustokentest.Sign(t, bustoken.Generate(), bustoken.MCP, a.claims()), "bad signature"},
		{"reprojected", "Bearer " + reprojected, "bad signature"},
		{"expired", "Bearer " + expired, "expired"},
		{"a dispatch token", "Bearer " + bustokentest.Sign(t, f.keys, bustoken.Dispatch, a.claims()), `a "dispatch" token`},
		{"a caller token", "Bearer " + bustokentest.Sign(t, f.keys, bustoken.Caller, a.claims()), `a "caller" token`},
		{"names no run", "Bearer " + bustokentest.Sign(t, f.keys, bustoken.MCP, noRun), "names no run"},
		{"the run ended", "Bearer " + f.token(t, ended), "has ended"},
		{"another tenant's run", "Bearer " + bustokentest.Sign(t, f.keys, bustoken.MCP, crossed), "has ended"},
	}
	write := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_write","arguments":{"name":"x","content":"y"}}}`
	for _, tt := range tests {
		for _, path := range []string{"/mcp", "/mcp/ext/docs"} {
			t.Run(tt.name+path, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(write))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if tt.auth != "" {
					req.Header.Set("Authorization", tt.auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var e rpcError
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
					t.Fatalf("body: %v", err)
				}
				if resp.StatusCode != http.StatusUnauthorized || e.JSONRPC != "2.0" || string(e.ID) != "7" ||
					e.Error.Code != codeUnauthorized || !strings.Contains(e.Error.Message, tt.want) {
					t.Errorf("status %d, error %+v, want 401 saying %q", resp.StatusCode, e, tt.want)
				}
			})
		}
	}
	var n int
	if err := f.db.QueryRow(context.Background(), `SELECT count(*) FROM mcpbridge.memory`).Scan(&n); err != nil || n != 0 {
		t.Errorf("refused requests wrote %d notes (%v)", n, err)
	}

	// The same request with run a's own token is served: the refusals
	// above are the token's, not the request's.
	if out, isErr := call(t, f.connect(t, good), "memory_write", map[string]any{"name": "x", "content": "y"}); isErr {
		t.Errorf("memory_write with a live run's token: %s", out)
	}
	// A session opened while the run was live is refused once it ends.
	cs := f.connect(t, good)
	f.end(t, a)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory_read", Arguments: map[string]any{"name": "x"}}); err == nil {
		t.Error("a call after the run ended was served")
	}
	// A live run with both its tokens reaches the external servers'
	// handler, which refuses a server outside the run's set.
	live := f.start(t, tenant, project)
	req, _ := http.NewRequest(http.MethodPost, f.url+"/mcp/ext/docs", strings.NewReader(write))
	req.Header.Set("Authorization", "Bearer "+f.token(t, live))
	req.Header.Set(bustoken.DispatchHeader, bustokentest.Sign(t, f.keys, bustoken.Dispatch, live.claims()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		body, _ := io.ReadAll(resp.Body)
		t.Errorf("/mcp/ext/docs: status %d %s, want 403 (docs is not in the run's servers)", resp.StatusCode, body)
	}
}

// TestExternalNeedsTheRunsDispatchToken: /mcp/ext/<slug> is served only
// when the request's dispatch token names the tenant, project and run of
// its mcp token, and the handler behind it then calls with that dispatch
// token; any other is refused 401 before the handler runs.
func TestExternalNeedsTheRunsDispatchToken(t *testing.T) {
	type seen struct {
		run   binding.Run
		token string
	}
	got := make(chan seen, 1)
	f := newFixtureExt(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run, _ := binding.From(r.Context())
		got <- seen{run, svc.TokenFrom(r.Context())}
		w.WriteHeader(http.StatusNoContent)
	}))
	tenant, project := uuid.NewString(), uuid.NewString()
	a := f.start(t, tenant, project)
	b := f.start(t, tenant, project)
	dispatch := func(c bustoken.Claims) string { return bustokentest.Sign(t, f.keys, bustoken.Dispatch, c) }
	otherProject, otherTenant := a.claims(), a.claims()
	otherProject.ProjectID = uuid.NewString()
	otherTenant.TenantID = uuid.NewString()

	post := func(t *testing.T, dispatchToken string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, f.url+"/mcp/ext/docs", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+f.token(t, a))
		if dispatchToken != "" {
			req.Header.Set(bustoken.DispatchHeader, dispatchToken)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	refusals := []struct{ name, token, want string }{
		{"none", "", "needs the run's dispatch token"},
		{"another run's", dispatch(b.claims()), "another run"},
		{"another project's", dispatch(otherProject), "another run"},
		{"another tenant's", dispatch(otherTenant), "another run"},
		{"forged", bustokentest.Sign(t, bustoken.Generate(), bustoken.Dispatch, a.claims()), "bad signature"},
		{"an mcp token", f.token(t, a), `a \"mcp\" token`},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := post(t, tt.token); status != http.StatusUnauthorized || !strings.Contains(body, tt.want) {
				t.Errorf("status %d %s, want 401 saying %q", status, body, tt.want)
			}
			select {
			case s := <-got:
				t.Errorf("the handler was reached: %+v", s)
			default:
			}
		})
	}
	own := dispatch(a.claims())
	if status, body := post(t, own); status != http.StatusNoContent {
		t.Fatalf("run a's own dispatch token: status %d %s", status, body)
	}
	s := <-got
	if s.token != own || s.run.RunID != a.id || s.run.TenantID != tenant {
		t.Errorf("the handler saw run %+v calling with %q, want run %s with its dispatch token", s.run, s.token, a.id)
	}
}
