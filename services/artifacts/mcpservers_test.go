package artifacts

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

// TestMCPServersSealedScopedAndResolved: secrets are sealed and never
// returned, a project's server hides the tenant's of the same slug, an
// update without secrets keeps them, and only a dispatch token of the
// project resolves them.
func TestMCPServersSealedScopedAndResolved(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	a, b := newCaller(), newCaller()
	const project, other = "proj-a", "proj-b"
	var docs events.MCPServerDef
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: events.MCPServerDef{Slug: "docs", Transport: events.MCPHTTP,
		URL: "https://mcp.example.com/mcp", Exposure: events.MCPExposure{DisabledTools: map[string][]string{"codex": {"delete_all"}}}},
		Headers: map[string]string{"Authorization": "Bearer hdr-secret-1", "X-Team": "team-secret-2"}}, &docs)
	want := []string{"Authorization", "X-Team"}
	if diff := cmp.Diff(want, docs.HeaderNames); diff != "" || docs.Name != "docs" || docs.ProjectID != "" || docs.Disabled {
		t.Errorf("created server = %+v; header names (-want +got):\n%s", docs, diff)
	}
	var tools events.MCPServerDef
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: events.MCPServerDef{ProjectID: project, Slug: "docs",
		Name: "Project docs", Transport: events.MCPStdio, Command: "npx", Args: []string{"-y", "some-server"}},
		Env: map[string]string{"API_TOKEN": "env-secret-3"}}, &tools)

	var raw []string
	rows, _ := e.db.Query(ctx, `SELECT credential FROM artifacts.mcp_servers WHERE tenant_id = $1`, a.TenantID)
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		raw = append(raw, s)
	}
	rows.Close()
	if len(raw) != 2 {
		t.Fatalf("stored credentials = %q, want 2", raw)
	}
	for _, r := range raw {
		if !strings.HasPrefix(r, "v1:") || strings.Contains(r, "secret") {
			t.Errorf("stored credential %q is not sealed", r)
		}
	}
	// Nothing a client reads carries a secret: not the list, not a get, not the audit log.
	var lists [2][]events.MCPServerDef
	e.must(events.OpMCPServersList, events.MCPServersList{Caller: a}, &lists[0])
	e.must(events.OpMCPServersList, events.MCPServersList{Caller: a, ProjectID: project}, &lists[1])
	if len(lists[0]) != 1 || lists[0][0].ID != docs.ID || len(lists[1]) != 1 || lists[1][0].ID != tools.ID {
		t.Errorf("tenant list = %+v, project list = %+v", lists[0], lists[1])
	}
	var audit string
	_ = e.db.QueryRow(ctx, `SELECT string_agg(coalesce(before::text, '') || coalesce(after::text, ''), ' ') FROM artifacts.audit_log
		WHERE tenant_id = $1 AND target_type = 'mcp_server'`, a.TenantID).Scan(&audit)
	if !strings.Contains(audit, "Authorization") || strings.Contains(audit, "secret") {
		t.Errorf("audit log = %s; want the header names and no secret", audit)
	}

	resolve := func(tok string, c events.Caller, project string) (events.ResolvedMCPServer, error) {
		var got events.ResolvedMCPServer
		err := e.callWith(tok, events.OpMCPServersResolve, events.MCPServerRef{Caller: c, ProjectID: project, Slug: "docs"}, &got)
		return got, err
	}
	runOf := func(c events.Caller, project string) string {
		return sign(t, bustoken.Dispatch, bustoken.Claims{TenantID: c.TenantID, RunID: "r-" + project, ProjectID: project})
	}
	// The project's own server wins in its project; another project gets the tenant's.
	got, err := resolve(runOf(a, project), a, project)
	if err != nil || got.ID != tools.ID || got.Env["API_TOKEN"] != "env-secret-3" || got.Command != "npx" {
		t.Errorf("resolve in %s = %+v, %v; want the project's stdio server with its env", project, got, err)
	}
	got, err = resolve(runOf(a, other), a, other)
	if err != nil || got.ID != docs.ID || got.Headers["Authorization"] != "Bearer hdr-secret-1" {
		t.Errorf("resolve in %s = %+v, %v; want the tenant's http server with its headers", other, got, err)
	}
	// A probe's caller token (the bridge forwards the gateway's) gets its tenant's.
	if got, err = resolve(sign(t, bustoken.Caller, bustoken.Claims{TenantID: a.TenantID, Role: "admin"}), a, other); err != nil || got.ID != docs.ID {
		t.Errorf("resolve with the tenant's caller token = %+v, %v", got, err)
	}
	// An update that does not resend the headers keeps them; an empty map clears them.
	upd := docs
	upd.URL = "https://mcp.example.com/v2"
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: upd}, nil)
	if got, err = resolve(runOf(a, other), a, other); err != nil || got.URL != upd.URL || got.Headers["X-Team"] != "team-secret-2" {
		t.Errorf("after an update without headers = %+v, %v; want them kept", got, err)
	}
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: upd, Headers: map[string]string{}}, &docs)
	if got, err = resolve(runOf(a, other), a, other); err != nil || len(got.Headers) != 0 || len(docs.HeaderNames) != 0 {
		t.Errorf("after clearing the headers = %+v (names %q), %v", got, docs.HeaderNames, err)
	}

	refusals := []struct {
		name string
		tok  string
		c    events.Caller
		proj string
		want int
	}{
		{"tenant B's caller token naming tenant A", sign(t, bustoken.Caller, bustoken.Claims{TenantID: b.TenantID, Role: "admin"}), a, project, http.StatusUnauthorized},
		{"a run of another project asking for this one's", runOf(a, other), a, project, http.StatusUnauthorized},
		{"a run of tenant B naming tenant A", runOf(b, project), a, project, http.StatusUnauthorized},
		{"a run of tenant B, its own tenant, A's slug", runOf(b, project), b, project, http.StatusNotFound},
	}
	for _, tt := range refusals {
		if got, err := resolve(tt.tok, tt.c, tt.proj); status(err) != tt.want {
			t.Errorf("%s: resolve = %+v, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	// Another tenant neither reads nor deletes them.
	if err := e.call(events.OpMCPServersGet, events.MCPServerRef{Caller: b, Slug: "docs"}, nil); status(err) != http.StatusNotFound {
		t.Errorf("tenant B get = %v, want 404", err)
	}
	if err := e.call(events.OpMCPServersDelete, events.MCPServerRef{Caller: b, Slug: "docs"}, nil); status(err) != http.StatusNotFound {
		t.Errorf("tenant B delete = %v, want 404", err)
	}
	// A disabled server resolves like a missing one; deleting the
	// project's uncovers the tenant's.
	dis := tools
	dis.Disabled = true
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: dis}, nil)
	if got, err = resolve(runOf(a, project), a, project); err != nil || got.ID != docs.ID {
		t.Errorf("with the project's disabled = %+v, %v; want the tenant's", got, err)
	}
	e.must(events.OpMCPServersDelete, events.MCPServerRef{Caller: a, Slug: "docs"}, nil)
	if _, err = resolve(runOf(a, other), a, other); status(err) != http.StatusNotFound {
		t.Errorf("after deleting the tenant's = %v, want 404", err)
	}
	// A deleted project's servers go with its other artifacts.
	e.must(events.OpProjectForget, events.ProjectRef{Caller: a, ProjectID: project}, nil)
	if err := e.call(events.OpMCPServersGet, events.MCPServerRef{Caller: a, ProjectID: project, Slug: "docs"}, nil); status(err) != http.StatusNotFound {
		t.Errorf("a forgotten project's server = %v, want 404", err)
	}
}

// TestMCPServerValidationNamesTheField: every refusal is a 400 whose
// message names what is wrong, and nothing is stored.
func TestMCPServerValidationNamesTheField(t *testing.T) {
	e := start(t)
	c := newCaller()
	http := func(url string) events.MCPServerDef {
		return events.MCPServerDef{Slug: "s", Transport: events.MCPHTTP, URL: url}
	}
	stdio := events.MCPServerDef{Slug: "s", Transport: events.MCPStdio, Command: "server"}
	tests := []struct {
		name string
		give events.MCPServerPut
		want string
	}{
		{"no slug", events.MCPServerPut{Server: events.MCPServerDef{Transport: events.MCPStdio, Command: "x"}}, "server.slug is required"},
		{"bad slug", events.MCPServerPut{Server: events.MCPServerDef{Slug: "Bad Slug", Transport: events.MCPStdio, Command: "x"}}, "server.slug"},
		{"the internal tools' slug", events.MCPServerPut{Server: events.MCPServerDef{Slug: "clopen", Transport: events.MCPStdio, Command: "x"}}, `server.slug "clopen"`},
		{"no transport", events.MCPServerPut{Server: events.MCPServerDef{Slug: "s", Command: "x"}}, "server.transport is required"},
		{"unknown transport", events.MCPServerPut{Server: events.MCPServerDef{Slug: "s", Transport: "sse", URL: "https://a.example"}}, "server.transport"},
		{"http without url", events.MCPServerPut{Server: http("")}, "server.url is required"},
		{"plain http", events.MCPServerPut{Server: http("http://mcp.example.com/mcp")}, "server.url"},
		{"a private address", events.MCPServerPut{Server: http("https://10.0.0.5/mcp")}, "server.url"},
		{"metadata address", events.MCPServerPut{Server: http("https://169.254.169.254/")}, "server.url"},
		{"credentials in the url", events.MCPServerPut{Server: http("https://u:p@mcp.example.com/")}, "server.url"},
		{"http with a command", events.MCPServerPut{Server: events.MCPServerDef{Slug: "s", Transport: events.MCPHTTP, URL: "https://mcp.example.com", Command: "x"}}, "server.command"},
		{"env on http", events.MCPServerPut{Server: http("https://mcp.example.com"), Env: map[string]string{"A": "b"}}, "env is for stdio"},
		{"stdio without command", events.MCPServerPut{Server: events.MCPServerDef{Slug: "s", Transport: events.MCPStdio}}, "server.command is required"},
		{"headers on stdio", events.MCPServerPut{Server: stdio, Headers: map[string]string{"A": "b"}}, "headers are for http"},
		{"bad env name", events.MCPServerPut{Server: stdio, Env: map[string]string{"1X": "b"}}, `env "1X"`},
		{"bad header name", events.MCPServerPut{Server: http("https://mcp.example.com"), Headers: map[string]string{"Bad Header": "b"}}, `headers "Bad Header"`},
		{"reserved header", events.MCPServerPut{Server: http("https://mcp.example.com"), Headers: map[string]string{"Mcp-Session-Id": "b"}}, "headers Mcp-Session-Id"},
		{"header value with a line break", events.MCPServerPut{Server: http("https://mcp.example.com"), Headers: map[string]string{"X-A": "b\r\nX-B: c"}}, "headers X-A"},
		{"unknown engine", events.MCPServerPut{Server: events.MCPServerDef{Slug: "s", Transport: events.MCPStdio, Command: "x",
			Exposure: events.MCPExposure{Engines: []events.EngineType{"nope"}}}}, "server.exposure.engines[0]"},
		{"unknown engine of disabled tools", events.MCPServerPut{Server: events.MCPServerDef{Slug: "s", Transport: events.MCPStdio, Command: "x",
			Exposure: events.MCPExposure{DisabledTools: map[string][]string{"nope": {"t"}}}}}, "server.exposure.disabledTools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.give.Caller = c
			err := e.call(events.OpMCPServersPut, tt.give, nil)
			if status(err) != 400 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("put = %v; want 400 naming %q", err, tt.want)
			}
		})
	}
	var list []events.MCPServerDef
	e.must(events.OpMCPServersList, events.MCPServersList{Caller: c}, &list)
	if len(list) != 0 {
		t.Errorf("refused puts stored %+v", list)
	}
	// Changing a server's transport while keeping secrets that no longer
	// fit is refused rather than carrying env into headers.
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: c, Server: stdio, Env: map[string]string{"K": "v"}}, nil)
	err := e.call(events.OpMCPServersPut, events.MCPServerPut{Caller: c, Server: http("https://mcp.example.com")}, nil)
	if status(err) != 400 || !strings.Contains(err.Error(), "env is for stdio") {
		t.Errorf("transport change keeping env = %v, want 400", err)
	}
}

// TestMCPServerSecretsRotate: a key rotation re-seals them, and a row's
// envelope copied onto another row does not open there.
func TestMCPServerSecretsRotate(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := newCaller()
	for _, slug := range []string{"one", "two"} {
		e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: c, Server: events.MCPServerDef{Slug: slug, Transport: events.MCPStdio,
			Command: "server"}, Env: map[string]string{"TOKEN": slug + "-secret"}}, nil)
	}
	next, _, _ := seal.Generate()
	if n, err := rotateTo(e, next); err != nil || n != 2 {
		t.Fatalf("RotateKey = %d, %v; want both servers re-sealed", n, err)
	}
	st := &store.Store{DB: e.db, Keys: seal.Ring(next), Docs: &store.Docs{Root: e.dataDir}}
	got, err := st.ResolveMCPServer(ctx, c.TenantID, "", "two", nil)
	if err != nil || got.Env["TOKEN"] != "two-secret" {
		t.Fatalf("after rotation = %+v, %v", got, err)
	}
	if _, err := e.db.Exec(ctx, `UPDATE artifacts.mcp_servers SET credential = (SELECT credential FROM artifacts.mcp_servers
		WHERE tenant_id = $1 AND slug = 'one') WHERE tenant_id = $1 AND slug = 'two'`, c.TenantID); err != nil {
		t.Fatal(err)
	}
	if got, err := st.ResolveMCPServer(ctx, c.TenantID, "", "two", nil); err == nil {
		t.Errorf("a copied envelope opened: %+v", got)
	}
}

// TestContentNamesTheRunsMCPServers: a run's content names the external
// servers it gets: the project's and the tenant's enabled ones (never
// another tenant's), only those its profile names when it names any, and
// only those exposed to its engine.
func TestContentNamesTheRunsMCPServers(t *testing.T) {
	e := start(t)
	a, b := newCaller(), newCaller()
	const project = "proj-a"
	server := func(c events.Caller, projectID, slug string, engines ...events.EngineType) events.MCPServerDef {
		var d events.MCPServerDef
		e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: c, Server: events.MCPServerDef{ProjectID: projectID, Slug: slug,
			Transport: events.MCPHTTP, URL: "https://mcp.example.com/" + slug, Exposure: events.MCPExposure{Engines: engines}}}, &d)
		return d
	}
	server(a, "", "docs")
	server(a, "", "search", events.EngineClaudeCode)
	off := server(a, "", "off")
	off.Disabled = true
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: off}, nil)
	server(a, project, "docs")
	server(a, project, "local")
	server(b, "", "theirs")
	server(b, project, "theirs-too")

	slugs := func(c events.Caller, engine events.EngineType, projectID, profile string) []string {
		t.Helper()
		var got events.Content
		e.must(events.OpContent, events.ContentRequest{Caller: c, Engine: engine, ProjectID: projectID, ProfileID: profile}, &got)
		out := []string{}
		for _, s := range got.MCPServers {
			if s.URL != "" || len(s.Headers) != 0 {
				t.Errorf("server %q carries a URL or headers: %+v", s.Name, s)
			}
			out = append(out, s.Name)
		}
		return out
	}
	var onlyLocal, onlyOff events.Profile
	e.must(events.OpProfilesPut, events.ProfilePut{Caller: a, Profile: events.Profile{Name: "Local",
		Items: []events.ProfileItem{{Type: events.ArtifactMCP, Ref: "local"}}}}, &onlyLocal)
	e.must(events.OpProfilesPut, events.ProfilePut{Caller: a, Profile: events.Profile{Name: "Off",
		Items: []events.ProfileItem{{Type: events.ArtifactMCP, Ref: "off"}}}}, &onlyOff)
	if err := e.call(events.OpProfilesPut, events.ProfilePut{Caller: a, Profile: events.Profile{Name: "Bad",
		Items: []events.ProfileItem{{Type: events.ArtifactMCP, Ref: "Not A Slug"}}}}, nil); status(err) != 400 {
		t.Errorf("a profile naming an MCP server by a bad slug: %v, want 400", err)
	}
	tests := []struct {
		name    string
		caller  events.Caller
		engine  events.EngineType
		project string
		profile string
		want    []string
	}{
		{"pi in the project", a, events.EnginePi, project, "", []string{"docs", "local"}},
		{"claude-code in the project", a, events.EngineClaudeCode, project, "", []string{"docs", "local", "search"}},
		{"pi in another project", a, events.EnginePi, "proj-b", "", []string{"docs"}},
		{"a profile naming one", a, events.EnginePi, project, onlyLocal.ID, []string{"local"}},
		{"a profile naming a disabled one", a, events.EnginePi, project, onlyOff.ID, []string{}},
		{"the other tenant", b, events.EnginePi, project, "", []string{"theirs", "theirs-too"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, slugs(tt.caller, tt.engine, tt.project, tt.profile)); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
		})
	}
	// A run gets at most MaxRunMCPServers, the first by slug.
	many := newCaller()
	for i := range events.MaxRunMCPServers + 1 {
		server(many, "", fmt.Sprintf("s%02d", i))
	}
	got := slugs(many, events.EnginePi, project, "")
	if len(got) != events.MaxRunMCPServers || got[0] != "s00" || got[len(got)-1] != fmt.Sprintf("s%02d", events.MaxRunMCPServers-1) {
		t.Errorf("%d servers: the run got %v", events.MaxRunMCPServers+1, got)
	}
}
