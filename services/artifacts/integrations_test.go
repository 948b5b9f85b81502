package artifacts

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

// connect puts an integration account and returns it as stored.
func (e *env) connect(c events.Caller, in events.Integration, credential string) events.Integration {
	e.t.Helper()
	var got events.Integration
	e.must(events.OpIntegrationsPut, events.IntegrationPut{Caller: c, Integration: in, Credential: &credential}, &got)
	return got
}

// resolved is the MCP server of slug as a run of project gets it, its
// secrets in clear.
func (e *env) resolved(c events.Caller, project, slug string) (events.ResolvedMCPServer, error) {
	var got events.ResolvedMCPServer
	err := e.call(events.OpMCPServersResolve, events.MCPServerRef{Caller: c, ProjectID: project, Slug: slug}, &got)
	return got, err
}

// rawServer is the stored row of an MCP server, every column, its sealed
// credential included.
func (e *env) rawServer(c events.Caller, project, slug string) string {
	e.t.Helper()
	var raw string
	err := e.db.QueryRow(context.Background(), `SELECT to_jsonb(m)::text FROM artifacts.mcp_servers m
		WHERE tenant_id = $1 AND project_id = $2 AND slug = $3`, c.TenantID, project, slug).Scan(&raw)
	if err != nil {
		e.t.Fatalf("row of MCP server %s/%s: %v", project, slug, err)
	}
	return raw
}

// TestIntegrationProjectsItsMCPServer: connecting a GitHub account with
// agent-tools creates the tenant's github server, its header sealed and
// carrying the key, marked as the integration's; the server is refused
// to direct changes, follows the account's new key, is what a profile
// naming github gives a run, and goes with the account.
func TestIntegrationProjectsItsMCPServer(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	a := newCaller()
	const key = "ghp_integration-secret-1"
	gh := e.connect(a, events.Integration{Provider: "github", Label: "work", Capabilities: []string{events.CapabilityAgentTools}}, key)
	if gh.Projection == nil || gh.Projection.Slug != "github" || gh.Projection.Adopted || !gh.HasCredential || gh.Status != events.IntegrationUnknown {
		t.Fatalf("connected = %+v; want a created github projection", gh)
	}
	var def events.MCPServerDef
	e.must(events.OpMCPServersGet, events.MCPServerRef{Caller: a, Slug: "github"}, &def)
	want := events.MCPServerDef{ID: gh.Projection.ServerID, Slug: "github", Name: "GitHub: work", Transport: events.MCPHTTP,
		URL: "https://api.githubcopilot.com/mcp/", EnvNames: []string{}, HeaderNames: []string{"Authorization"},
		ManagedBy: "integration:" + gh.ID}
	if diff := cmp.Diff(want, def, cmpIgnoreTimes); diff != "" {
		t.Errorf("projected server (-want +got):\n%s", diff)
	}
	got, err := e.resolved(a, "", "github")
	if err != nil || got.Headers["Authorization"] != "Bearer "+key {
		t.Errorf("a run resolves %+v, %v; want the key as a bearer token", got, err)
	}
	var sealed string
	_ = e.db.QueryRow(ctx, `SELECT (SELECT string_agg(credential, ' ') FROM artifacts.mcp_servers WHERE tenant_id = $1) || ' ' ||
		(SELECT string_agg(credential, ' ') FROM artifacts.integration_accounts WHERE tenant_id = $1)`, a.TenantID).Scan(&sealed)
	if strings.Contains(sealed, "secret") || !strings.HasPrefix(sealed, "v1:") {
		t.Errorf("stored credentials %q are not sealed", sealed)
	}

	// The server is the integration's: no direct change.
	for op, req := range map[string]any{
		events.OpMCPServersPut: events.MCPServerPut{Caller: a, Server: events.MCPServerDef{Slug: "github", Transport: events.MCPHTTP,
			URL: "https://evil.example.com/mcp"}},
		events.OpMCPServersDelete: events.MCPServerRef{Caller: a, Slug: "github"},
	} {
		if err := e.call(op, req, nil); status(err) != http.StatusConflict || !strings.Contains(err.Error(), "integration "+gh.ID) {
			t.Errorf("%s of the projected server = %v; want 409 naming integration %s", op, err, gh.ID)
		}
	}

	// Nor an OAuth sign-in, which the integration's next change would drop.
	err = e.call(events.OpMCPOAuthStart, events.MCPOAuthStart{MCPServerRef: events.MCPServerRef{Caller: a, Slug: "github"}}, nil)
	if status(err) != http.StatusConflict || !strings.Contains(err.Error(), "integration:"+gh.ID) {
		t.Errorf("an OAuth sign-in to the projected server = %v; want 409 naming integration %s", err, gh.ID)
	}

	// A new key re-seals the server's header; a label change keeps the key.
	const key2 = "ghp_integration-secret-2"
	e.must(events.OpIntegrationsPut, events.IntegrationPut{Caller: a, Integration: events.Integration{ID: gh.ID, Label: "work",
		Capabilities: gh.Capabilities}, Credential: ptr(key2)}, nil)
	var renamed events.Integration
	e.must(events.OpIntegrationsPut, events.IntegrationPut{Caller: a, Integration: events.Integration{ID: gh.ID, Label: "office",
		Capabilities: gh.Capabilities}}, &renamed)
	if got, err = e.resolved(a, "", "github"); err != nil || got.Headers["Authorization"] != "Bearer "+key2 || got.Name != "GitHub: office" {
		t.Errorf("after a new key and label, a run resolves %+v, %v", got, err)
	}

	// A profile bundles the projected server by slug like any other; a
	// slug that names no server gives nothing.
	server := func(slug string) {
		e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: events.MCPServerDef{Slug: slug, Transport: events.MCPHTTP,
			URL: "https://mcp.example.com/" + slug}}, nil)
	}
	server("docs")
	profile := func(refs ...string) string {
		p := events.Profile{Name: strings.Join(refs, "+")}
		for _, r := range refs {
			p.Items = append(p.Items, events.ProfileItem{Type: events.ArtifactMCP, Ref: r})
		}
		e.must(events.OpProfilesPut, events.ProfilePut{Caller: a, Profile: p}, &p)
		return p.ID
	}
	runServers := func(profile string) []string {
		var c events.Content
		e.must(events.OpContent, events.ContentRequest{Caller: a, Engine: events.EnginePi, ProjectID: "proj", ProfileID: profile}, &c)
		out := []string{}
		for _, s := range c.MCPServers {
			out = append(out, s.Name)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		give string
		want []string
	}{
		{"no profile", "", []string{"docs", "github"}},
		{"a profile naming github", profile("github"), []string{"github"}},
		{"a profile naming github and no server", profile("github", "ghost"), []string{"github"}},
		{"a profile naming no server", profile("ghost"), []string{}},
	} {
		if diff := cmp.Diff(tt.want, runServers(tt.give)); diff != "" {
			t.Errorf("%s: the run's servers (-want +got):\n%s", tt.name, diff)
		}
	}

	// Dropping agent-tools lets the server go; adding it back projects it again.
	var dropped events.Integration
	e.must(events.OpIntegrationsPut, events.IntegrationPut{Caller: a, Integration: events.Integration{ID: gh.ID, Label: "office"}}, &dropped)
	if _, err := e.resolved(a, "", "github"); status(err) != http.StatusNotFound || dropped.Projection != nil {
		t.Errorf("without agent-tools: %+v; resolve = %v, want 404", dropped, err)
	}
	e.must(events.OpIntegrationsPut, events.IntegrationPut{Caller: a, Integration: events.Integration{ID: gh.ID, Label: "office",
		Capabilities: gh.Capabilities}}, nil)
	if got, err = e.resolved(a, "", "github"); err != nil || got.Headers["Authorization"] != "Bearer "+key2 {
		t.Errorf("agent-tools again: %+v, %v; want the stored key", got, err)
	}
	e.must(events.OpIntegrationsDelete, events.RefByID{Caller: a, ID: gh.ID}, nil)
	if _, err := e.resolved(a, "", "github"); status(err) != http.StatusNotFound {
		t.Errorf("after disconnecting, resolve = %v, want 404", err)
	}
	if err := e.call(events.OpIntegrationsGet, events.RefByID{Caller: a, ID: gh.ID}, nil); status(err) != http.StatusNotFound {
		t.Errorf("a disconnected integration = %v, want 404", err)
	}
}

var cmpIgnoreTimes = cmp.FilterPath(func(p cmp.Path) bool {
	f := p.Last().String()
	return f == ".CreatedAt" || f == ".UpdatedAt"
}, cmp.Ignore())

func ptr[T any](v T) *T { return &v }

// TestIntegrationAdoptsAndRestores: an account whose slug names a server
// already there adopts it; disconnecting puts the row back exactly as it
// was, every column and its sealed credential, and after a key rotation
// every column but the re-sealed credential, which still opens. A
// project-bound account adopts its project's row, not the tenant's, and
// goes with its project.
func TestIntegrationAdoptsAndRestores(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	a := newCaller()
	const project = "proj-a"
	for _, p := range []string{"", project} {
		e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: events.MCPServerDef{ProjectID: p, Slug: "tools",
			Name: "Hand-made", Transport: events.MCPStdio, Command: "tools-server", Args: []string{"--fast"}, Disabled: p == "",
			Exposure: events.MCPExposure{Engines: []events.EngineType{events.EnginePi}}}, Env: map[string]string{"TOKEN": "env-secret-" + p}}, nil)
	}
	before := e.rawServer(a, project, "tools")
	tenantRow := e.rawServer(a, "", "tools")
	vendor := events.Integration{ProjectID: project, Provider: "custom", Label: "vendor", Capabilities: []string{events.CapabilityAgentTools},
		Server: events.IntegrationServer{Slug: "tools", URL: "https://tools.example.com/mcp", HeaderName: "X-Api-Key"}}

	in := e.connect(a, vendor, "vendor-secret")
	if in.Projection == nil || !in.Projection.Adopted || in.Projection.ProjectID != project {
		t.Fatalf("connected = %+v; want the project's row adopted", in)
	}
	var def events.MCPServerDef
	e.must(events.OpMCPServersGet, events.MCPServerRef{Caller: a, ProjectID: project, Slug: "tools"}, &def)
	if def.Transport != events.MCPHTTP || def.URL != vendor.Server.URL || def.Command != "" || len(def.Exposure.Engines) != 1 ||
		def.ManagedBy != "integration:"+in.ID || def.ID != in.Projection.ServerID {
		t.Errorf("adopted server = %+v; want the custom server, keeping its id and exposure", def)
	}
	if got, err := e.resolved(a, project, "tools"); err != nil || got.Headers["X-Api-Key"] != "vendor-secret" || len(got.Env) != 0 {
		t.Errorf("a run resolves %+v, %v; want the key in X-Api-Key and no env", got, err)
	}
	if got := e.rawServer(a, "", "tools"); got != tenantRow {
		t.Errorf("the tenant's row changed:\n%s\nwant\n%s", got, tenantRow)
	}
	// Another account may not take a projected server over.
	err := e.call(events.OpIntegrationsPut, events.IntegrationPut{Caller: a, Integration: events.Integration{ProjectID: project,
		Provider: "github", Label: "x", Capabilities: []string{events.CapabilityAgentTools}, Server: events.IntegrationServer{Slug: "tools"}},
		Credential: ptr("k")}, nil)
	if status(err) != http.StatusConflict || !strings.Contains(err.Error(), in.ID) {
		t.Errorf("a second account on the same slug = %v; want 409 naming %s", err, in.ID)
	}
	e.must(events.OpIntegrationsDelete, events.RefByID{Caller: a, ID: in.ID}, nil)
	if got := e.rawServer(a, project, "tools"); got != before {
		t.Errorf("restored row:\n%s\nwant it byte for byte:\n%s", got, before)
	}

	// Adopted again, then a key rotation: the kept credential is re-sealed
	// for the row, and opens once the row is back.
	in = e.connect(a, vendor, "vendor-secret")
	next, _, _ := seal.Generate()
	if n, err := rotateTo(e, next); err != nil || n != 4 {
		t.Fatalf("RotateKey = %d, %v; want 4 re-sealed: both rows, the account and the kept credential", n, err)
	}
	st := &store.Store{DB: e.db, Keys: seal.Ring(next), Docs: &store.Docs{Root: e.dataDir}}
	if _, err := st.DeleteIntegration(ctx, a.TenantID, in.ID); err != nil {
		t.Fatal(err)
	}
	var fields, fieldsBefore string
	if err := e.db.QueryRow(ctx, `SELECT (to_jsonb(m) - 'credential' - 'key_fingerprint')::text,
		(($3::jsonb) - 'credential' - 'key_fingerprint')::text FROM artifacts.mcp_servers m
		WHERE tenant_id = $1 AND project_id = $2 AND slug = 'tools'`, a.TenantID, project, before).Scan(&fields, &fieldsBefore); err != nil {
		t.Fatal(err)
	}
	if fields != fieldsBefore {
		t.Errorf("restored after a rotation:\n%s\nwant\n%s", fields, fieldsBefore)
	}
	got, err := st.ResolveMCPServer(ctx, a.TenantID, project, "tools", nil)
	if err != nil || got.Env["TOKEN"] != "env-secret-"+project || got.Command != "tools-server" || len(got.Headers) != 0 {
		t.Errorf("the restored server resolves %+v, %v; want its own env", got, err)
	}

	// A deleted project's accounts go with its servers (the store holds
	// the new key, which the service was not given).
	if in, _, err = st.PutIntegration(ctx, a.TenantID, vendor, ptr("vendor-secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ForgetProject(ctx, a.TenantID, project); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetIntegration(ctx, a.TenantID, in.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a forgotten project's integration: %v, want not found", err)
	}
}

// TestIntegrationTenancyAndValidation: another tenant neither reads,
// changes nor disconnects an account, and its own account of the same
// slug creates its own server rather than adopting the first tenant's.
// Every refusal is a 400 naming the field, and stores nothing.
func TestIntegrationTenancyAndValidation(t *testing.T) {
	e := start(t)
	a, b := newCaller(), newCaller()
	e.must(events.OpMCPServersPut, events.MCPServerPut{Caller: a, Server: events.MCPServerDef{Slug: "github", Transport: events.MCPHTTP,
		URL: "https://mcp.example.com/a"}, Headers: map[string]string{"Authorization": "Bearer a-secret"}}, nil)
	aRow := e.rawServer(a, "", "github")
	gh := events.Integration{Provider: "github", Label: "work", Capabilities: []string{events.CapabilityAgentTools}}
	mine := e.connect(a, gh, "a-key")

	for op, req := range map[string]any{
		events.OpIntegrationsGet:    events.RefByID{Caller: b, ID: mine.ID},
		events.OpIntegrationsDelete: events.RefByID{Caller: b, ID: mine.ID},
		events.OpIntegrationsStatus: events.IntegrationStatusSet{Caller: b, ID: mine.ID, Status: events.IntegrationOK},
		events.OpIntegrationsPut: events.IntegrationPut{Caller: b, Integration: events.Integration{ID: mine.ID, Label: "stolen"},
			Credential: ptr("b-key")},
	} {
		if err := e.call(op, req, nil); status(err) != http.StatusNotFound {
			t.Errorf("tenant B %s of A's integration = %v, want 404", op, err)
		}
	}
	if err := e.call(events.OpIntegrationsStatus, events.IntegrationStatusSet{Caller: a, ID: mine.ID, Status: "fine"}, nil); status(err) != http.StatusBadRequest {
		t.Errorf("an unknown status = %v, want 400", err)
	}
	e.must(events.OpIntegrationsStatus, events.IntegrationStatusSet{Caller: a, ID: mine.ID, Status: events.IntegrationNeedsAuth, Reason: "401"}, nil)
	e.must(events.OpIntegrationsGet, events.RefByID{Caller: a, ID: mine.ID}, &mine)
	if mine.Status != events.IntegrationNeedsAuth || mine.StatusReason != "401" {
		t.Errorf("after recording a status: %+v", mine)
	}
	var list []events.Integration
	e.must(events.OpIntegrationsList, events.ListRequest{Caller: b}, &list)
	if len(list) != 0 {
		t.Errorf("tenant B lists %+v", list)
	}
	theirs := e.connect(b, gh, "b-key")
	if theirs.Projection == nil || theirs.Projection.Adopted {
		t.Errorf("tenant B's account = %+v; want its own server created, not A's adopted", theirs)
	}
	if got, err := e.resolved(b, "", "github"); err != nil || got.Headers["Authorization"] != "Bearer b-key" {
		t.Errorf("tenant B's run resolves %+v, %v", got, err)
	}
	e.must(events.OpIntegrationsDelete, events.RefByID{Caller: a, ID: mine.ID}, nil)
	if got := e.rawServer(a, "", "github"); got != aRow {
		t.Errorf("A's row after B's connect and A's disconnect:\n%s\nwant\n%s", got, aRow)
	}

	custom := func(url, header string) events.Integration {
		return events.Integration{Provider: "custom", Label: "c", Capabilities: []string{events.CapabilityAgentTools},
			Server: events.IntegrationServer{Slug: "c", URL: url, HeaderName: header}}
	}
	long := strings.Repeat("x", 9000)
	tests := []struct {
		name string
		give events.Integration
		cred *string
		want string
	}{
		{"unknown provider", events.Integration{Provider: "gitlab", Label: "x"}, ptr("k"), `integration.provider "gitlab"`},
		{"no label", events.Integration{Provider: "github"}, ptr("k"), "integration.label is required"},
		{"long label", events.Integration{Provider: "github", Label: long}, ptr("k"), "integration.label: at most 200"},
		{"no credential", events.Integration{Provider: "github", Label: "x"}, nil, "credential is required"},
		{"credential with NUL", events.Integration{Provider: "github", Label: "x"}, ptr("a\x00b"), "credential: a string may not contain the NUL"},
		{"credential with a line break", events.Integration{Provider: "github", Label: "x"}, ptr("a\r\nX-Evil: 1"), "credential: no line break"},
		{"oversize credential", events.Integration{Provider: "github", Label: "x"}, ptr(long), "credential: no line break or NUL byte, at most 8192"},
		{"unknown capability", events.Integration{Provider: "github", Label: "x", Capabilities: []string{"source"}}, ptr("k"),
			`integration.capabilities[0] "source"`},
		{"bad slug", events.Integration{Provider: "github", Label: "x", Server: events.IntegrationServer{Slug: "Bad Slug"}}, ptr("k"),
			`integration.server.slug "Bad Slug"`},
		{"the internal tools' slug", events.Integration{Provider: "github", Label: "x", Server: events.IntegrationServer{Slug: "clopen"}}, ptr("k"),
			`integration.server.slug "clopen"`},
		{"github with another URL", events.Integration{Provider: "github", Label: "x", Server: events.IntegrationServer{URL: "https://evil.example.com"}},
			ptr("k"), "integration.server: only the slug"},
		{"custom without URL", custom("", "X-Key"), ptr("k"), "integration.server.url is required"},
		{"custom on a private address", custom("https://10.0.0.5/mcp", "X-Key"), ptr("k"), "integration.server.url"},
		{"custom over plain http", custom("http://mcp.example.com/mcp", "X-Key"), ptr("k"), "integration.server.url"},
		{"custom without header", custom("https://mcp.example.com/mcp", ""), ptr("k"), "integration.server.headerName is required"},
		{"custom with a reserved header", custom("https://mcp.example.com/mcp", "Host"), ptr("k"), `integration.server.headerName "Host"`},
		{"custom with a bad header", custom("https://mcp.example.com/mcp", "Bad Header"), ptr("k"), `integration.server.headerName "Bad Header"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := e.call(events.OpIntegrationsPut, events.IntegrationPut{Caller: a, Integration: tt.give, Credential: tt.cred}, nil)
			if status(err) != http.StatusBadRequest || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("put = %v; want 400 naming %q", err, tt.want)
			}
		})
	}
	e.must(events.OpIntegrationsList, events.ListRequest{Caller: a}, &list)
	if len(list) != 0 {
		t.Errorf("refused puts stored %+v", list)
	}
	if got := e.rawServer(a, "", "github"); got != aRow {
		t.Errorf("refused puts changed A's row:\n%s", got)
	}

	// The server's name is the provider's and the label, cut to 200
	// bytes on a character boundary.
	wide := custom("https://mcp.example.com/mcp", "X-Key")
	wide.Label = strings.Repeat("é", 100)
	e.connect(a, wide, "k")
	var def events.MCPServerDef
	e.must(events.OpMCPServersGet, events.MCPServerRef{Caller: a, Slug: "c"}, &def)
	if len(def.Name) > 200 || !utf8.ValidString(def.Name) || !strings.HasPrefix(def.Name, "Custom MCP server: éé") {
		t.Errorf("server name %q (%d bytes)", def.Name, len(def.Name))
	}
}
