package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
	"clopen.dev/services/gateway/internal/httpapi"
)

// routeTable is the gateway's route table, read without serving it.
func routeTable() []httpapi.Route {
	return httpapi.New(httpapi.DefaultConfig(), httpapi.Deps{}).Routes()
}

// bodies are valid bodies for the routes that take one, so that a refusal
// is about access, not about the body; any other route gets {}.
var bodies = map[string]string{
	"POST /v1/users":                            `{"email":"x@example.test","name":"X"}`,
	"POST /v1/api-keys":                         `{"name":"x"}`,
	"POST /v1/projects":                         `{"name":"x"}`,
	"PATCH /v1/projects/{id}":                   `{"name":"stolen"}`,
	"POST /v1/projects/{id}/members":            `{"userId":"%USER%"}`,
	"POST /v1/projects/{id}/sessions":           `{"title":"x"}`,
	"PATCH /v1/sessions/{id}":                   `{"title":"stolen"}`,
	"POST /v1/sessions/{id}/messages":           `{"text":"hi"}`,
	"POST /v1/sessions/{id}/cancel":             `{}`,
	"POST /v1/sessions/{id}/interrupt":          `{}`,
	"POST /v1/sessions/{id}/answer":             `{"toolUseId":"toolu_1","decision":"allow"}`,
	"DELETE /v1/projects/{id}/members/{userId}": ``,

	"POST /v1/skills":                       `{"slug":"stolen","description":"Stolen.","body":"x"}`,
	"PUT /v1/skills/{slug}":                 `{"description":"Stolen.","body":"stolen"}`,
	"POST /v1/skills/import-commands":       `{"commands":[{"slug":"stolen","body":"x","enabled":true,"createdAt":"2024-01-01T00:00:00Z"}]}`,
	"POST /v1/subagents":                    `{"slug":"stolen","description":"Stolen."}`,
	"PUT /v1/subagents/{slug}":              `{"description":"Stolen.","body":"stolen"}`,
	"PUT /v1/instructions":                  `{"content":"stolen"}`,
	"PUT /v1/projects/{id}/instructions":    `{"content":"stolen"}`,
	"PUT /v1/permissions":                   `{"allow":[],"deny":["Read"]}`,
	"PUT /v1/projects/{id}/permissions":     `{"allow":[],"deny":["Read"]}`,
	"PUT /v1/profiles/{id}/permissions":     `{"allow":[],"deny":["Read"]}`,
	"POST /v1/profiles":                     `{"name":"Stolen"}`,
	"PUT /v1/profiles/{id}":                 `{"name":"Stolen"}`,
	"PUT /v1/projects/{id}/default-profile": `{"profileId":""}`,
	"POST /v1/providers":                    `{"engine":"codex","slug":"stolen","name":"Stolen"}`,
	"PUT /v1/providers/{id}":                `{"engine":"codex","slug":"stolen","name":"Stolen"}`,
	"POST /v1/providers/{id}/accounts":      `{"name":"stolen","credential":"sk-stolen"}`,
	"PUT /v1/accounts/{id}":                 `{"name":"stolen","credential":"sk-stolen"}`,
	"POST /v1/artifacts/adopt":              `{"type":"skill","engine":"claude-code","path":"/nowhere/x"}`,
	"PATCH /v1/integrations/{id}":           `{"label":"stolen","credential":"stolen"}`,
}

// body returns the request body the sweeps send to a route.
func body(rt httpapi.Route, user string) []byte {
	b, ok := bodies[rt.Method+" "+rt.Path]
	if !ok {
		b = `{}`
	}
	return []byte(strings.ReplaceAll(b, "%USER%", user))
}

// filler puts tenant A's resources into a route's path parameters; a
// parameter it does not know is left in, and the sweeps fail on it.
func filler(a tenantFix, art artifactsFix) func(path string) string {
	ids := []struct{ prefix, id string }{
		{"/v1/api-keys/", a.admin.keyID},
		{"/v1/projects/", a.project.ID},
		{"/v1/sessions/", a.session.ID},
		{"/v1/runs/", a.runID},
		{"/v1/profiles/", art.profile.ID},
		{"/v1/providers/", art.provider.ID},
		{"/v1/accounts/", art.account.ID},
		{"/v1/integrations/", art.integration.ID},
	}
	slugs := []struct{ prefix, slug string }{{"/v1/skills/", art.skill}, {"/v1/subagents/", art.subagent}}
	return func(path string) string {
		for _, x := range ids {
			if strings.HasPrefix(path, x.prefix) {
				path = strings.Replace(path, "{id}", x.id, 1)
			}
		}
		for _, x := range slugs {
			if strings.HasPrefix(path, x.prefix) {
				path = strings.Replace(path, "{slug}", x.slug, 1)
			}
		}
		if strings.Contains(path, "/mcp-servers/") {
			path = strings.Replace(path, "{slug}", art.mcp, 1)
		}
		return strings.ReplaceAll(path, "{userId}", a.member.user.ID)
	}
}

// aboutAProject reports whether a route's path names a project's resource
// (or a key of another user): what a member outside the project must not
// reach. Tenant-wide artifacts are every member's to read.
func aboutAProject(path string) bool {
	for _, p := range []string{"/v1/projects/{", "/v1/sessions/{", "/v1/runs/{", "/v1/api-keys/{"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// TestTenancyEveryRoute sends every route that names a resource, filled
// with tenant A's resources, with keys that must not reach them: tenant B's
// admin (every such route), and A's member who is not in A's project (the
// routes about a project). Every one must answer 404, and A's resources
// must be unchanged afterwards.
func TestTenancyEveryRoute(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	b := e.newTenant(t, "bolt")
	art := e.newArtifacts(t, a)
	ctx := context.Background()
	fill := filler(a, art)

	intruders := []struct {
		name   string
		actor  actor
		tenant string
		covers func(path string) bool
	}{
		{"other tenant's admin", b.admin, b.tenant.ID, func(string) bool { return true }},
		{"member outside the project", a.outsider, a.tenant.ID, aboutAProject},
	}
	// Routes whose path parameters name no tenant's resource; where their
	// tenancy is checked instead.
	elsewhere := map[string]string{
		"POST /v1/artifacts/{kind}/generate": "a draft's tenancy is its account, checked by the engine worker: cmd/clopen/internal/stack",
	}
	tested := 0
	for _, in := range intruders {
		e.stub.takeCalls()
		for _, rt := range routeTable() {
			if !rt.Auth || !strings.Contains(rt.Path, "{") || !in.covers(rt.Path) {
				continue
			}
			key := rt.Method + " " + rt.Path
			if elsewhere[key] != "" {
				continue
			}
			path := fill(rt.Path)
			if strings.Contains(path, "{") {
				t.Errorf("%s: the sweep cannot fill %s; teach filler the new route", key, path)
				continue
			}
			t.Run(in.name+"/"+key, func(t *testing.T) {
				status, _, eb := rawDo(t, rt.Method, e.url+path, in.actor.key, body(rt, in.actor.user.ID))
				if status != http.StatusNotFound || eb.Error.Code != "not_found" {
					t.Errorf("%s %s = %d %+v, want 404 not_found", rt.Method, path, status, eb.Error)
				}
			})
			tested++
		}
		for _, c := range e.stub.takeCalls() {
			if c.caller.TenantID != in.tenant || c.caller.UserID != in.actor.user.ID {
				t.Errorf("%s: streammgr %s got caller %+v, want the key's tenant %s and user %s", in.name, c.op, c.caller, in.tenant, in.actor.user.ID)
			}
		}
	}
	if tested < 60 {
		t.Errorf("only %d route checks ran; the route table lost its resource routes?", tested)
	}

	// Nothing of A changed.
	if p, err := a.admin.c.Project(ctx, a.project.ID); err != nil || p.Name != "acme-project" {
		t.Errorf("A's project after the sweep = %+v, %v", p, err)
	}
	if s, err := a.member.c.Session(ctx, a.session.ID); err != nil || s.Title != "first" {
		t.Errorf("A's session after the sweep = %+v, %v", s, err)
	}
	if ms, err := a.admin.c.Members(ctx, a.project.ID); err != nil || len(ms) != 2 {
		t.Errorf("A's members after the sweep = %+v, %v", ms, err)
	}
	if _, err := a.admin.c.Me(ctx); err != nil {
		t.Errorf("A's admin key after the sweep: %v", err)
	}
	art.unchanged(t, a)
}

// TestTenancyLists checks the routes without a resource in their path:
// lists show only the caller's tenant, and naming another tenant's user is
// not found.
func TestTenancyLists(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	b := e.newTenant(t, "bolt")
	ctx := context.Background()

	ps, err := b.admin.c.Projects(ctx)
	if err != nil || len(ps) != 1 || ps[0].ID != b.project.ID {
		t.Errorf("B's projects = %+v, %v; want only B's", ps, err)
	}
	us, err := b.admin.c.Users(ctx)
	if err != nil || len(us) != 3 {
		t.Errorf("B's users = %+v, %v; want B's three", us, err)
	}
	for _, u := range us {
		if strings.HasSuffix(u.Email, "@acme.test") {
			t.Errorf("B sees A's user %s", u.Email)
		}
	}
	_, err = b.admin.c.APIKeys(ctx, a.member.user.ID)
	wantStatus(t, "B lists A's member's keys", err, http.StatusNotFound)
	_, err = b.admin.c.CreateAPIKey(ctx, apiCreateKeyFor(a.member.user.ID))
	wantStatus(t, "B mints a key for A's member", err, http.StatusNotFound)
	_, err = b.admin.c.AddMember(ctx, b.project.ID, apiAddMember(a.member.user.ID))
	wantStatus(t, "B adds A's member to B's project", err, http.StatusNotFound)

	// Artifacts: B's lists, layers and picker hold nothing of A's.
	art := e.newArtifacts(t, a)
	if ss, err := b.admin.c.Skills(ctx); err != nil || len(ss) != 0 {
		t.Errorf("B's skills = %+v, %v", ss, err)
	}
	if ss, err := b.admin.c.Subagents(ctx); err != nil || len(ss) != 0 {
		t.Errorf("B's subagents = %+v, %v", ss, err)
	}
	if ps, err := b.admin.c.Profiles(ctx); err != nil || len(ps) != 0 {
		t.Errorf("B's profiles = %+v, %v", ps, err)
	}
	if ps, err := b.admin.c.Providers(ctx); err != nil || len(ps) != 0 {
		t.Errorf("B's providers = %+v, %v", ps, err)
	}
	if ms, err := b.admin.c.MCPServers(ctx, client.Layer{}); err != nil || len(ms) != 0 {
		t.Errorf("B's MCP servers = %+v, %v", ms, err)
	}
	if ms, err := b.admin.c.MCPServers(ctx, client.Layer{ProjectID: b.project.ID}); err != nil || len(ms) != 0 {
		t.Errorf("B's project's MCP servers = %+v, %v", ms, err)
	}
	if av, err := b.member.c.AvailableSkills(ctx, b.project.ID, ""); err != nil || len(av) != 0 {
		t.Errorf("B's picker = %+v, %v", av, err)
	}
	if av, err := b.member.c.AvailableSkills(ctx, "", art.profile.ID); err != nil || len(av) != 0 {
		t.Errorf("B's picker under A's profile = %+v, %v; want B's own (none)", av, err)
	}
	_, err = b.admin.c.EffectivePermissions(ctx, b.project.ID, art.profile.ID)
	wantStatus(t, "B's effective permissions under A's profile", err, http.StatusNotFound)
	_, err = b.admin.c.SetDefaultProfile(ctx, b.project.ID, art.profile.ID)
	wantStatus(t, "B defaults to A's profile", err, http.StatusNotFound)
	if rev, err := b.member.c.ArtifactRevision(ctx); err != nil || rev != 0 {
		t.Errorf("B's revision = %d, %v; want 0", rev, err)
	}
	art.unchanged(t, a)
}

func apiCreateKeyFor(user string) api.CreateAPIKey { return api.CreateAPIKey{Name: "x", UserID: user} }
func apiAddMember(user string) api.AddMember       { return api.AddMember{UserID: user} }

// The gateway remembers which project a session is in, so that a send,
// cancel, interrupt or answer needs no lookup in streammgr first; access to
// the project is still checked on every call. A member removed from the
// project is refused at once although the gateway knows the session from
// the member's own calls, and another tenant naming the session is refused
// as before.
func TestRemovedMemberLosesTheSessionAtOnce(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme") // a.member created the session and sent to it
	b := e.newTenant(t, "bolt")
	ctx := context.Background()
	if _, err := a.member.c.Cancel(ctx, a.session.ID, a.runID); err != nil {
		t.Fatalf("the member cancels in its project: %v", err)
	}
	for _, intruder := range []actor{b.admin, a.outsider} {
		_, err := intruder.c.Cancel(ctx, a.session.ID, a.runID)
		wantStatus(t, intruder.user.Email+" cancels", err, http.StatusNotFound)
	}
	if err := a.admin.c.RemoveMember(ctx, a.project.ID, a.member.user.ID); err != nil {
		t.Fatal(err)
	}
	e.stub.takeCalls()
	_, err := a.member.c.Cancel(ctx, a.session.ID, a.runID)
	wantStatus(t, "the removed member cancels", err, http.StatusNotFound)
	_, err = a.member.c.Interrupt(ctx, a.session.ID, a.runID)
	wantStatus(t, "the removed member interrupts", err, http.StatusNotFound)
	_, err = a.member.c.Answer(ctx, a.session.ID, api.Answer{RunID: a.runID, ToolUseID: "toolu_1", Decision: "allow"})
	wantStatus(t, "the removed member answers", err, http.StatusNotFound)
	_, err = a.member.c.SendMessage(ctx, a.session.ID, api.SendMessage{Text: "still here?"})
	wantStatus(t, "the removed member sends", err, http.StatusNotFound)
	for _, c := range e.stub.takeCalls() {
		// The session's project is known: not even a lookup reaches streammgr.
		t.Errorf("streammgr got %s from the removed member; the gateway must refuse first", c.op)
	}
	if _, err := a.admin.c.Cancel(ctx, a.session.ID, a.runID); err != nil {
		t.Errorf("the tenant's admin still cancels: %v", err)
	}
}
