package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

func ptr[T any](v T) *T { return &v }

// TestInstructionsAndPermissionsREST saves every layer through its route
// and checks the effective rules are the layered merge: denies of every
// layer, the most specific non-empty allow list; the profile is the one
// asked for, else the project's default.
func TestInstructionsAndPermissionsREST(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	adm, mem := a.admin.c, a.member.c
	global, project := client.Layer{}, client.Layer{ProjectID: a.project.ID}

	// Instructions: admins write the tenant's, a project's owners theirs.
	in, err := adm.PutInstructions(ctx, global, api.InstructionsInput{Content: "Answer in English."})
	if err != nil || in.Content != "Answer in English." || !in.Enabled || in.Scope != events.ScopeGlobal {
		t.Errorf("PutInstructions global = %+v, %v", in, err)
	}
	if in, err = mem.Instructions(ctx, global); err != nil || in.Content != "Answer in English." {
		t.Errorf("member reads global instructions = %+v, %v", in, err)
	}
	in, err = adm.PutInstructions(ctx, global, api.InstructionsInput{Content: "Answer in French.", Enabled: ptr(false)})
	if err != nil || in.Enabled {
		t.Errorf("disable global instructions = %+v, %v", in, err)
	}
	if in, err = adm.PutInstructions(ctx, global, api.InstructionsInput{Content: "Answer in German."}); err != nil || in.Enabled {
		t.Errorf("enabled omitted = %+v, %v; want the state kept (off)", in, err)
	}
	_, err = mem.PutInstructions(ctx, project, api.InstructionsInput{Content: "x"})
	wantStatus(t, "plain member writes project instructions", err, http.StatusForbidden)
	if _, err := adm.AddMember(ctx, a.project.ID, api.AddMember{UserID: a.member.user.ID, Role: api.ProjectOwner}); err != nil {
		t.Fatal(err)
	}
	if in, err = mem.PutInstructions(ctx, project, api.InstructionsInput{Content: "Use the monorepo tools."}); err != nil ||
		in.Scope != events.ScopeProject || in.ProjectID != a.project.ID || !in.Enabled {
		t.Errorf("owner writes project instructions = %+v, %v", in, err)
	}
	_, err = mem.PutInstructions(ctx, global, api.InstructionsInput{Content: "x"})
	wantStatus(t, "project owner writes global instructions", err, http.StatusForbidden)
	if in, err = adm.PutInstructions(ctx, project, api.InstructionsInput{Content: "  "}); err != nil || in.Content != "" {
		t.Errorf("blank project instructions = %+v, %v; want deleted", in, err)
	}

	// Permissions: three layers, then the merge.
	prof, err := adm.CreateProfile(ctx, api.ProfileInput{Name: "Read only"})
	if err != nil {
		t.Fatal(err)
	}
	profile := client.Layer{ProfileID: prof.ID}
	put := func(c *client.Client, l client.Layer, allow, deny []string) {
		t.Helper()
		set, err := c.PutPermissions(ctx, l, events.PermissionRules{Allow: allow, Deny: deny})
		if err != nil || len(deny) != len(set.Deny) || len(deny) > 0 && !cmp.Equal(deny, set.Deny) {
			t.Fatalf("PutPermissions %+v = %+v, %v", l, set, err)
		}
	}
	put(adm, global, []string{"Read", "Bash", "mcp__*"}, []string{"WebFetch"})
	put(mem, project, nil, []string{"Bash"})
	put(adm, profile, []string{"Read"}, []string{"Write"})
	_, err = mem.PutPermissions(ctx, profile, events.PermissionRules{Deny: []string{"x"}})
	wantStatus(t, "member writes a profile's layer", err, http.StatusForbidden)
	_, err = mem.PutPermissions(ctx, global, events.PermissionRules{Deny: []string{"x"}})
	wantStatus(t, "member writes the global layer", err, http.StatusForbidden)
	_, err = adm.PutPermissions(ctx, client.Layer{ProfileID: "00000000-0000-0000-0000-000000000000"}, events.PermissionRules{Deny: []string{"x"}})
	wantStatus(t, "layer of a missing profile", err, http.StatusNotFound)
	_, err = adm.PutPermissions(ctx, global, events.PermissionRules{Deny: []string{"Ba*sh"}})
	wantStatus(t, "a * inside a pattern", err, http.StatusBadRequest)
	if set, err := a.outsider.c.Permissions(ctx, profile); err != nil || !cmp.Equal([]string{"Read"}, set.Allow) {
		t.Errorf("member reads a profile's layer = %+v, %v", set, err)
	}

	effective := func(profile string) events.PermissionRules {
		t.Helper()
		_, err := a.outsider.c.EffectivePermissions(ctx, a.project.ID, profile)
		wantStatus(t, "effective permissions of a project the caller is not in", err, http.StatusNotFound)
		r, err := mem.EffectivePermissions(ctx, a.project.ID, profile)
		if err != nil {
			t.Fatalf("EffectivePermissions(%q): %v", profile, err)
		}
		return r
	}
	tests := []struct {
		name string
		give func() string // the profile asked for, after any setup
		want events.PermissionRules
	}{
		{"global and project", func() string { return "" },
			events.PermissionRules{Allow: []string{"Read", "Bash", "mcp__*"}, Deny: []string{"WebFetch", "Bash"}}},
		{"with the profile", func() string { return prof.ID },
			events.PermissionRules{Allow: []string{"Read"}, Deny: []string{"WebFetch", "Bash", "Write"}}},
		{"the project's default profile", func() string {
			if _, err := mem.SetDefaultProfile(ctx, a.project.ID, prof.ID); err != nil {
				t.Fatal(err)
			}
			return ""
		}, events.PermissionRules{Allow: []string{"Read"}, Deny: []string{"WebFetch", "Bash", "Write"}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, effective(tt.give())); diff != "" {
			t.Errorf("%s: effective permissions (-want +got):\n%s", tt.name, diff)
		}
	}
	_, err = mem.EffectivePermissions(ctx, a.project.ID, "00000000-0000-0000-0000-000000000000")
	wantStatus(t, "effective permissions under a missing profile", err, http.StatusNotFound)

	// Empty lists delete a layer.
	put(adm, global, nil, nil)
	if set, err := mem.Permissions(ctx, global); err != nil || len(set.Allow)+len(set.Deny) != 0 {
		t.Errorf("global layer after clearing = %+v, %v", set, err)
	}
}

// TestProfilesREST: CRUD, the project's default profile through its route
// and through PATCH /v1/projects/{id} (one truth, in artifacts), and a
// deleted profile leaving no project pointing at it.
func TestProfilesREST(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	adm, mem := a.admin.c, a.member.c
	if _, err := adm.CreateSkill(ctx, api.SkillInput{Slug: "greet", Description: "Greets.", Body: "Hi $1.", Triggers: []string{"slash"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateSkill(ctx, api.SkillInput{Slug: "deploy", Description: "Deploys.", Body: "Deploy.", Triggers: []string{"slash"}}); err != nil {
		t.Fatal(err)
	}
	p, err := adm.CreateProfile(ctx, api.ProfileInput{Name: "Greeter", Description: "Only greets.",
		Items: []events.ProfileItem{{Type: events.ArtifactSkill, Ref: "greet"}}})
	if err != nil || p.ID == "" || p.Slug != "greeter" || len(p.Items) != 1 {
		t.Fatalf("CreateProfile = %+v, %v", p, err)
	}
	_, err = mem.CreateProfile(ctx, api.ProfileInput{Name: "Mine"})
	wantStatus(t, "member creates a profile", err, http.StatusForbidden)
	_, err = adm.CreateProfile(ctx, api.ProfileInput{Name: "Bad", Items: []events.ProfileItem{{Type: "widget", Ref: "x"}}})
	wantStatus(t, "profile with an unknown item type", err, http.StatusBadRequest)
	if got, err := mem.Profile(ctx, p.ID); err != nil || got.Description != "Only greets." {
		t.Errorf("member reads the profile = %+v, %v", got, err)
	}
	p, err = adm.ReplaceProfile(ctx, p.ID, api.ProfileInput{Name: "Greeter", Items: []events.ProfileItem{
		{Type: events.ArtifactSkill, Ref: "greet"}, {Type: events.ArtifactSubagent, Ref: "helper"}}})
	if err != nil || len(p.Items) != 2 || p.Description != "" {
		t.Errorf("ReplaceProfile = %+v, %v", p, err)
	}
	_, err = adm.ReplaceProfile(ctx, "00000000-0000-0000-0000-000000000000", api.ProfileInput{Name: "x"})
	wantStatus(t, "replace a missing profile", err, http.StatusNotFound)
	if list, err := mem.Profiles(ctx); err != nil || len(list) != 1 {
		t.Errorf("Profiles = %+v, %v", list, err)
	}

	// The default profile: none, then set by the route, which the picker
	// follows.
	if d, err := mem.DefaultProfile(ctx, a.project.ID); err != nil || d.ProfileID != "" || d.ProjectID != a.project.ID {
		t.Errorf("DefaultProfile = %+v, %v", d, err)
	}
	if av, _ := mem.AvailableSkills(ctx, a.project.ID, ""); len(av) != 2 {
		t.Errorf("picker without a profile = %+v, want both skills", av)
	}
	_, err = mem.SetDefaultProfile(ctx, a.project.ID, p.ID)
	wantStatus(t, "plain member sets the default profile", err, http.StatusForbidden)
	_, err = adm.SetDefaultProfile(ctx, a.project.ID, "00000000-0000-0000-0000-000000000000")
	wantStatus(t, "default to a missing profile", err, http.StatusNotFound)
	if d, err := adm.SetDefaultProfile(ctx, a.project.ID, p.ID); err != nil || d.ProfileID != p.ID {
		t.Fatalf("SetDefaultProfile = %+v, %v", d, err)
	}
	if pr, err := mem.Project(ctx, a.project.ID); err != nil || pr.DefaultProfileID != p.ID {
		t.Errorf("project after SetDefaultProfile = %+v, %v", pr, err)
	}
	if av, _ := mem.AvailableSkills(ctx, a.project.ID, ""); len(av) != 1 || av[0].Slug != "greet" {
		t.Errorf("picker under the default profile = %+v, want greet alone", av)
	}

	// PATCH /v1/projects/{id} sets the same default, in artifacts.
	if _, err := adm.UpdateProject(ctx, a.project.ID, api.UpdateProject{DefaultProfileID: ptr("")}); err != nil {
		t.Fatal(err)
	}
	if d, _ := mem.DefaultProfile(ctx, a.project.ID); d.ProfileID != "" {
		t.Errorf("default after PATCH clearing it = %+v", d)
	}
	_, err = adm.UpdateProject(ctx, a.project.ID, api.UpdateProject{DefaultProfileID: ptr("00000000-0000-0000-0000-000000000000")})
	wantStatus(t, "PATCH a missing default profile", err, http.StatusNotFound)
	if pr, err := adm.UpdateProject(ctx, a.project.ID, api.UpdateProject{DefaultProfileID: ptr(p.ID)}); err != nil || pr.DefaultProfileID != p.ID {
		t.Fatalf("PATCH default profile = %+v, %v", pr, err)
	}
	if d, _ := mem.DefaultProfile(ctx, a.project.ID); d.ProfileID != p.ID {
		t.Errorf("default after PATCH = %+v, want %s", d, p.ID)
	}

	// Deleting the profile leaves no project defaulting to it.
	if err := adm.DeleteProfile(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if d, _ := mem.DefaultProfile(ctx, a.project.ID); d.ProfileID != "" {
		t.Errorf("default after deleting the profile = %+v", d)
	}
	if pr, _ := mem.Project(ctx, a.project.ID); pr.DefaultProfileID != "" {
		t.Errorf("project after deleting its default profile = %+v", pr)
	}
	_, err = mem.Profile(ctx, p.ID)
	wantStatus(t, "get a deleted profile", err, http.StatusNotFound)
}

// TestProvidersAndAccountsREST: credentials go in and never come back out
// of any reply; hasCredential and the key fingerprint say one is stored.
func TestProvidersAndAccountsREST(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	adm := a.admin.c
	const secret = "sk-live-never-returned"

	pr, err := adm.CreateProvider(ctx, api.ProviderInput{Engine: events.EngineClaudeCode, Slug: "anthropic", Name: "Anthropic"})
	if err != nil || pr.ID == "" || !pr.Enabled || pr.CreatedAt.IsZero() {
		t.Fatalf("CreateProvider = %+v, %v; want an enabled provider with its creation time", pr, err)
	}
	off, err := adm.CreateProvider(ctx, api.ProviderInput{Engine: events.EngineCodex, Slug: "openai", Name: "OpenAI", Enabled: ptr(false)})
	if err != nil || off.Enabled || off.CreatedAt.IsZero() {
		t.Errorf("CreateProvider disabled = %+v, %v; want it disabled, with its creation time", off, err)
	}
	_, err = adm.CreateProvider(ctx, api.ProviderInput{Engine: "nonsense", Slug: "x", Name: "X"})
	wantStatus(t, "provider of an unknown engine", err, http.StatusBadRequest)
	_, err = a.member.c.CreateProvider(ctx, api.ProviderInput{Engine: events.EngineCodex, Slug: "x", Name: "X"})
	wantStatus(t, "member creates a provider", err, http.StatusForbidden)

	status, raw := rawBody(t, http.MethodPost, e.url+"/v1/providers/"+pr.ID+"/accounts", a.admin.key,
		[]byte(`{"name":"main","credential":"`+secret+`"}`))
	if status != http.StatusCreated || strings.Contains(string(raw), secret) {
		t.Fatalf("create account = %d %s; want 201 without the credential", status, raw)
	}
	second, err := adm.CreateAccount(ctx, pr.ID, api.AccountInput{Name: "spare", Credential: ptr("sk-spare")})
	if err != nil || second.Active || !second.HasCredential || second.KeyFingerprint == "" {
		t.Errorf("second account = %+v, %v; want inactive with a credential", second, err)
	}
	for _, path := range []string{"/v1/providers/" + pr.ID + "/accounts", "/v1/providers"} {
		for _, who := range []actor{a.admin, a.member} {
			status, raw := rawBody(t, http.MethodGet, e.url+path, who.key, nil)
			if status != http.StatusOK || strings.Contains(string(raw), secret) || strings.Contains(string(raw), "sk-spare") {
				t.Errorf("GET %s = %d %s; want 200 without credentials", path, status, raw)
			}
		}
	}
	var sealed string
	if err := e.db.QueryRow(ctx, `SELECT credential FROM artifacts.engine_accounts WHERE name = 'main'`).Scan(&sealed); err != nil ||
		strings.Contains(sealed, secret) {
		t.Errorf("stored credential %q, %v: want it sealed", sealed, err)
	}

	accs, err := adm.Accounts(ctx, pr.ID)
	if err != nil || len(accs) != 2 || !accs[0].Active || !accs[0].HasCredential {
		t.Fatalf("Accounts = %+v, %v", accs, err)
	}
	main := accs[0]
	if err := adm.ActivateAccount(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "member activates an account", a.member.c.ActivateAccount(ctx, main.ID), http.StatusForbidden)
	// Renaming keeps the credential; "" clears it.
	if got, err := adm.ReplaceAccount(ctx, main.ID, api.AccountInput{Name: "renamed"}); err != nil || got.Name != "renamed" || !got.HasCredential || got.Active {
		t.Errorf("rename = %+v, %v; want the credential kept, inactive", got, err)
	}
	if got, err := adm.ReplaceAccount(ctx, main.ID, api.AccountInput{Name: "renamed", Credential: ptr("")}); err != nil || got.HasCredential {
		t.Errorf("clear credential = %+v, %v", got, err)
	}
	_, err = adm.ReplaceAccount(ctx, "00000000-0000-0000-0000-000000000000", api.AccountInput{Name: "x"})
	wantStatus(t, "replace a missing account", err, http.StatusNotFound)

	// Replacing a provider keeps what its body does not say.
	got, err := adm.ReplaceProvider(ctx, pr.ID, api.ProviderInput{Engine: events.EngineClaudeCode, Slug: "anthropic", Name: "Anthropic EU",
		APIURL: "https://eu.example.test"})
	if err != nil || got.Name != "Anthropic EU" || !got.Enabled || got.ActiveID != second.ID || got.Accounts != 2 || !got.CreatedAt.Equal(pr.CreatedAt) {
		t.Errorf("ReplaceProvider = %+v, %v", got, err)
	}
	if err := adm.DeleteAccount(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if accs, _ := adm.Accounts(ctx, pr.ID); len(accs) != 1 || !accs[0].Active {
		t.Errorf("after deleting the active account = %+v; want the other active", accs)
	}
	if err := adm.DeleteProvider(ctx, pr.ID); err != nil {
		t.Fatal(err)
	}
	_, err = adm.Accounts(ctx, pr.ID)
	wantStatus(t, "accounts of a deleted provider", err, http.StatusNotFound)
	if ps, err := adm.Providers(ctx); err != nil || len(ps) != 1 || ps[0].ID != off.ID {
		t.Errorf("Providers = %+v, %v", ps, err)
	}
}
