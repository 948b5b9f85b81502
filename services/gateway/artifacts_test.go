package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// artifactsFix is one tenant's artifacts, made by its admin: a skill, a
// subagent, a profile holding the skill, a provider with an account, an
// MCP server of the tenant and one of the project (both slug mcp), the
// project's instructions, permissions and default profile, and an
// integration account projecting the tenant's github server.
type artifactsFix struct {
	skill, subagent, mcp string
	profile              events.Profile
	provider             events.Provider
	account              events.Account
	integration          events.Integration
}

const fixCredential = "sk-fixture-credential"

func (e *env) newArtifacts(t *testing.T, f tenantFix) artifactsFix {
	t.Helper()
	ctx := context.Background()
	c := f.admin.c
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var art artifactsFix
	s, err := c.CreateSkill(ctx, api.SkillInput{Slug: "review", Description: "Reviews changes.", Body: "Review carefully.",
		Triggers: []string{events.SkillTriggerAuto, events.SkillTriggerSlash}})
	must("create skill", err)
	sub, err := c.CreateSubagent(ctx, api.SubagentInput{Slug: "tester", Description: "Writes tests.", Body: "You write tests."})
	must("create subagent", err)
	art.skill, art.subagent = s.Slug, sub.Slug
	art.profile, err = c.CreateProfile(ctx, api.ProfileInput{Name: "Careful", Items: []events.ProfileItem{{Type: events.ArtifactSkill, Ref: s.Slug}}})
	must("create profile", err)
	art.provider, err = c.CreateProvider(ctx, api.ProviderInput{Engine: events.EngineCodex, Slug: "openai", Name: "OpenAI"})
	must("create provider", err)
	art.account, err = c.CreateAccount(ctx, art.provider.ID, api.AccountInput{Name: "main", Credential: ptr(fixCredential)})
	must("create account", err)
	_, err = c.PutInstructions(ctx, client.Layer{ProjectID: f.project.ID}, api.InstructionsInput{Content: "Project rules."})
	must("project instructions", err)
	_, err = c.PutPermissions(ctx, client.Layer{ProjectID: f.project.ID}, events.PermissionRules{Deny: []string{"Bash"}})
	must("project permissions", err)
	_, err = c.PutPermissions(ctx, client.Layer{ProfileID: art.profile.ID}, events.PermissionRules{Deny: []string{"Write"}})
	must("profile permissions", err)
	_, err = c.SetDefaultProfile(ctx, f.project.ID, art.profile.ID)
	must("default profile", err)
	_, err = c.CreateMCPServer(ctx, client.Layer{}, api.MCPServerInput{Slug: "docs", Transport: events.MCPHTTP,
		URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer " + fixCredential}})
	must("tenant MCP server", err)
	_, err = c.CreateMCPServer(ctx, client.Layer{ProjectID: f.project.ID}, api.MCPServerInput{Slug: "docs", Transport: events.MCPStdio,
		Command: "docs-server", Env: map[string]string{"TOKEN": fixCredential}})
	must("project MCP server", err)
	art.mcp = "docs"
	art.integration, err = c.ConnectIntegration(ctx, api.IntegrationInput{Provider: "github", Label: "work",
		Capabilities: []string{events.CapabilityAgentTools}, Credential: fixCredential})
	must("integration", err)
	return art
}

// unchanged checks the fixture is as newArtifacts made it.
func (art artifactsFix) unchanged(t *testing.T, f tenantFix) {
	t.Helper()
	ctx := context.Background()
	c := f.admin.c
	if s, err := c.Skill(ctx, art.skill); err != nil || s.Description != "Reviews changes." || !strings.Contains(s.Body, "Review carefully.") {
		t.Errorf("skill = %+v, %v", s, err)
	}
	if s, err := c.Subagent(ctx, art.subagent); err != nil || s.Description != "Writes tests." {
		t.Errorf("subagent = %+v, %v", s, err)
	}
	if p, err := c.Profile(ctx, art.profile.ID); err != nil || p.Name != "Careful" || len(p.Items) != 1 {
		t.Errorf("profile = %+v, %v", p, err)
	}
	if ps, err := c.Providers(ctx); err != nil || len(ps) != 1 || ps[0].Slug != "openai" || ps[0].ActiveID != art.account.ID {
		t.Errorf("providers = %+v, %v", ps, err)
	}
	if as, err := c.Accounts(ctx, art.provider.ID); err != nil || len(as) != 1 || as[0].Name != "main" || !as[0].HasCredential {
		t.Errorf("accounts = %+v, %v", as, err)
	}
	if in, err := c.Instructions(ctx, client.Layer{ProjectID: f.project.ID}); err != nil || in.Content != "Project rules." {
		t.Errorf("project instructions = %+v, %v", in, err)
	}
	if ps, err := c.Permissions(ctx, client.Layer{ProjectID: f.project.ID}); err != nil || !slices.Equal(ps.Deny, []string{"Bash"}) {
		t.Errorf("project permissions = %+v, %v", ps, err)
	}
	if ps, err := c.Permissions(ctx, client.Layer{ProfileID: art.profile.ID}); err != nil || !slices.Equal(ps.Deny, []string{"Write"}) {
		t.Errorf("profile permissions = %+v, %v", ps, err)
	}
	if d, err := c.DefaultProfile(ctx, f.project.ID); err != nil || d.ProfileID != art.profile.ID {
		t.Errorf("default profile = %+v, %v", d, err)
	}
	if m, err := c.MCPServer(ctx, client.Layer{}, art.mcp); err != nil || m.URL != "https://mcp.example.com/mcp" || len(m.HeaderNames) != 1 {
		t.Errorf("tenant MCP server = %+v, %v", m, err)
	}
	if m, err := c.MCPServer(ctx, client.Layer{ProjectID: f.project.ID}, art.mcp); err != nil || m.Command != "docs-server" || len(m.EnvNames) != 1 {
		t.Errorf("project MCP server = %+v, %v", m, err)
	}
	if in, err := c.Integration(ctx, art.integration.ID); err != nil || in.Label != "work" || !in.HasCredential || in.Projection == nil {
		t.Errorf("integration = %+v, %v", in, err)
	}
	if m, err := c.MCPServer(ctx, client.Layer{}, "github"); err != nil || m.ManagedBy != "integration:"+art.integration.ID {
		t.Errorf("the integration's MCP server = %+v, %v", m, err)
	}
	if g, err := c.Permissions(ctx, client.Layer{}); err != nil || len(g.Allow)+len(g.Deny) != 0 {
		t.Errorf("global permissions = %+v, %v; want none", g, err)
	}
}

// artifactTags are the route table's artifacts groups.
var artifactTags = map[string]bool{"skills": true, "subagents": true, "instructions": true, "permissions": true,
	"profiles": true, "accounts": true, "artifacts": true, "mcp": true, "integrations": true}

// TestArtifactsAuthorization walks every artifacts route of the table: a
// member of the tenant in no project reads the tenant-wide artifacts and
// changes none of them (403); a plain member of a project reads its layers
// and default profile and changes none (403). Admins' rights are the CRUD
// tests'. No route reaches the worker-internal operations.
func TestArtifactsAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	art := e.newArtifacts(t, a)
	fill := filler(a, art)
	adminReads := map[string]bool{"GET /v1/artifacts/detect": true}
	n := 0
	for _, rt := range routeTable() {
		for _, internal := range []string{"resolve", "plan", "expand"} {
			if strings.Contains(rt.Path, internal) {
				t.Errorf("route %s %s looks like the internal %s operation", rt.Method, rt.Path, internal)
			}
		}
		if !artifactTags[rt.Tag] || !rt.Auth {
			continue // a route without a key (the OAuth callback) is no member's: TestMCPServersREST covers it
		}
		key := rt.Method + " " + rt.Path
		who, role := a.outsider, "tenant member"
		if strings.HasPrefix(rt.Path, "/v1/projects/{") {
			who, role = a.member, "project member"
		}
		want := http.StatusOK
		if rt.Method != http.MethodGet || adminReads[key] {
			want = http.StatusForbidden
		}
		t.Run(key, func(t *testing.T) {
			status, _, eb := rawDo(t, rt.Method, e.url+fill(rt.Path), who.key, body(rt, who.user.ID))
			if status != want {
				t.Errorf("%s as %s = %d %+v, want %d", key, role, status, eb.Error, want)
			}
		})
		n++
	}
	if n < 40 {
		t.Errorf("only %d artifacts routes; want the whole group", n)
	}
	art.unchanged(t, a)
}

// rawBody sends a request and returns the status and the raw reply.
func rawBody(t *testing.T, method, url, key string, body []byte) (int, []byte) {
	t.Helper()
	status, _, data := send(t, method, url, key, body)
	return status, data
}

// send sends a request with a bearer key and returns the status, the
// headers and the raw reply.
func send(t *testing.T, method, url, key string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

func TestSkillsREST(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	adm := a.admin.c
	rev0, err := a.member.c.ArtifactRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}

	doc := "---\nname: greet\ndescription: Greets someone.\ntriggers: [slash]\nargument-hint: <name>\nx-vendor: kept\n---\nSay hello to $1.\n"
	s, err := adm.CreateSkill(ctx, api.SkillInput{Slug: "greet", Document: doc})
	if err != nil || s.Slug != "greet" || s.Description != "Greets someone." || !s.Enabled || s.ArgumentHint != "<name>" {
		t.Fatalf("CreateSkill from SKILL.md = %+v, %v", s, err)
	}
	_, err = adm.CreateSkill(ctx, api.SkillInput{Slug: "greet", Description: "Again."})
	wantStatus(t, "create a taken slug", err, http.StatusConflict)
	_, err = adm.CreateSkill(ctx, api.SkillInput{Description: "No slug."})
	wantStatus(t, "create without a slug", err, http.StatusBadRequest)
	_, err = adm.CreateSkill(ctx, api.SkillInput{Slug: "../etc", Description: "x"})
	wantStatus(t, "create a traversing slug", err, http.StatusBadRequest)

	got, err := a.member.c.Skill(ctx, "greet")
	if err != nil || got.Body != "Say hello to $1.\n" || !slices.Equal(got.Triggers, []string{events.SkillTriggerSlash}) {
		t.Errorf("member Skill = %+v, %v", got, err)
	}
	off := false
	s, err = adm.ReplaceSkill(ctx, "greet", api.SkillInput{Description: "Greets warmly.", Body: "Hello, $1!", Triggers: []string{"slash"}, Enabled: &off})
	if err != nil || s.Description != "Greets warmly." || s.Enabled {
		t.Errorf("ReplaceSkill = %+v, %v", s, err)
	}
	if got, _ := adm.Skill(ctx, "greet"); got.Body != "Hello, $1!\n" && got.Body != "Hello, $1!" {
		t.Errorf("body after replace = %q", got.Body)
	}
	_, err = adm.ReplaceSkill(ctx, "nobody", api.SkillInput{Description: "x"})
	wantStatus(t, "replace a missing skill", err, http.StatusNotFound)
	_, err = adm.ReplaceSkill(ctx, "greet", api.SkillInput{Slug: "other", Description: "x"})
	wantStatus(t, "replace with another slug in the body", err, http.StatusBadRequest)
	_, err = a.member.c.ReplaceSkill(ctx, "greet", api.SkillInput{Description: "x"})
	wantStatus(t, "member replaces a skill", err, http.StatusForbidden)

	if _, err := adm.CreateSkill(ctx, api.SkillInput{Slug: "audit", Description: "Audits.", Body: "Audit."}); err != nil {
		t.Fatal(err)
	}
	list, err := a.member.c.Skills(ctx)
	if err != nil || len(list) != 2 || list[0].Slug != "audit" || list[1].Slug != "greet" || list[1].Body != "" {
		t.Errorf("Skills = %+v, %v; want audit and greet without bodies", list, err)
	}

	// The picker: greet is disabled, audit is not a slash skill.
	if av, err := a.member.c.AvailableSkills(ctx, "", ""); err != nil || len(av) != 0 {
		t.Errorf("AvailableSkills with greet disabled = %+v, %v", av, err)
	}
	on := true
	if _, err := adm.ReplaceSkill(ctx, "greet", api.SkillInput{Description: "Greets warmly.", Body: "Hello, $1!", Triggers: []string{"slash"}, Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	av, err := a.member.c.AvailableSkills(ctx, a.project.ID, "")
	want := []events.AvailableSkill{{Slug: "greet", Name: "greet", Description: "Greets warmly."}}
	if err != nil || !cmp.Equal(want, av) {
		t.Errorf("AvailableSkills (-want +got):\n%s (err %v)", cmp.Diff(want, av), err)
	}
	_, err = a.outsider.c.AvailableSkills(ctx, a.project.ID, "")
	wantStatus(t, "picker of a project the caller is not in", err, http.StatusNotFound)
	// A missing profile is none, as when /slug is expanded in a session
	// whose profile was deleted.
	if av, err := a.member.c.AvailableSkills(ctx, "", "00000000-0000-0000-0000-000000000000"); err != nil || !cmp.Equal(want, av) {
		t.Errorf("picker under a missing profile = %+v, %v; want greet", av, err)
	}

	imported, err := adm.ImportCommands(ctx, []events.LegacyCommand{{Slug: "deploy", Description: "Deploys.", Body: "Deploy $ARGUMENTS.", Enabled: true}})
	if err != nil || imported.Slugs["deploy"] == "" {
		t.Fatalf("ImportCommands = %+v, %v", imported, err)
	}
	again, err := adm.ImportCommands(ctx, []events.LegacyCommand{{Slug: "deploy", Description: "Deploys.", Body: "Deploy $ARGUMENTS.", Enabled: true}})
	if err != nil || again.Slugs["deploy"] != imported.Slugs["deploy"] {
		t.Errorf("second import = %+v, %v; want the same skill", again, err)
	}

	if err := adm.DeleteSkill(ctx, "audit"); err != nil {
		t.Fatal(err)
	}
	_, err = adm.Skill(ctx, "audit")
	wantStatus(t, "get a deleted skill", err, http.StatusNotFound)
	wantStatus(t, "delete a deleted skill", adm.DeleteSkill(ctx, "audit"), http.StatusNotFound)
	if rev, err := a.member.c.ArtifactRevision(ctx); err != nil || rev <= rev0 {
		t.Errorf("revision = %d, %v; want past %d", rev, err, rev0)
	}

	// Detect is the admins': it reports paths on the server.
	det, err := adm.Detect(ctx, events.ArtifactSkill, events.EngineClaudeCode)
	if err != nil || len(det) != 2 || !det[0].Managed {
		t.Errorf("Detect = %+v, %v; want the two managed skills", det, err)
	}
	_, err = adm.Adopt(ctx, api.AdoptInput{Type: events.ArtifactSkill, Engine: events.EngineClaudeCode, Path: "/nowhere/skill"})
	wantStatus(t, "adopt without a real home", err, http.StatusNotFound)
}

func TestSubagentsREST(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	adm := a.admin.c

	in := api.SubagentInput{Slug: "tester", Description: "Writes tests.", Body: "You write tests.", Model: "sonnet",
		Tools: []string{"Read", "Bash"}, ModelByEngine: map[string]string{"opencode": "gpt-5"}}
	s, err := adm.CreateSubagent(ctx, in)
	if err != nil || s.Slug != "tester" || !s.Enabled {
		t.Fatalf("CreateSubagent = %+v, %v", s, err)
	}
	_, err = adm.CreateSubagent(ctx, in)
	wantStatus(t, "create a taken slug", err, http.StatusConflict)
	got, err := a.member.c.Subagent(ctx, "tester")
	if err != nil || got.Body != "You write tests." && got.Body != "You write tests.\n" || got.Model != "sonnet" || got.ModelByEngine["opencode"] != "gpt-5" {
		t.Errorf("Subagent = %+v, %v", got, err)
	}
	in.Slug, in.Description = "", "Writes better tests."
	if s, err = adm.ReplaceSubagent(ctx, "tester", in); err != nil || s.Description != "Writes better tests." {
		t.Errorf("ReplaceSubagent = %+v, %v", s, err)
	}
	_, err = a.member.c.CreateSubagent(ctx, api.SubagentInput{Slug: "x", Description: "x"})
	wantStatus(t, "member creates a subagent", err, http.StatusForbidden)
	list, err := a.member.c.Subagents(ctx)
	if err != nil || len(list) != 1 || list[0].Description != "Writes better tests." {
		t.Errorf("Subagents = %+v, %v", list, err)
	}
	if err := adm.DeleteSubagent(ctx, "tester"); err != nil {
		t.Fatal(err)
	}
	if list, err := adm.Subagents(ctx); err != nil || len(list) != 0 {
		t.Errorf("Subagents after delete = %+v, %v", list, err)
	}
	_, err = adm.Subagent(ctx, "tester")
	wantStatus(t, "get a deleted subagent", err, http.StatusNotFound)
}
