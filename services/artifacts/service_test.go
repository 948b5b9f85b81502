package artifacts

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
)

// env is a running artifacts service on a real Postgres and an embedded
// JetStream.
type env struct {
	t        *testing.T
	nc       *nats.Conn
	js       jetstream.JetStream
	db       *pgxpool.Pool
	dataDir  string
	realHome string
}

func start(t *testing.T) *env { t.Helper(); return startWith(t, nil) }

// startWith starts the service with the test's configuration changed by
// tune, when set.
func startWith(t *testing.T, tune func(*Config)) *env {
	t.Helper()
	db := pgtest.New(t, Schema)
	nc, js := natstest.Connect(t, natstest.Start(t))
	e := &env{t: t, nc: nc, js: js, db: db, dataDir: t.TempDir(), realHome: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := Config{DataDir: e.dataDir, RealHome: e.realHome, Replicas: 1, Tokens: testKeys.Only(TokenKeys)}
	if tune != nil {
		tune(&cfg)
	}
	go func() { done <- Run(ctx, cfg, Deps{NATS: nc, DB: db, Logger: logging.Discard(), Health: health.New()}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		var r events.RevisionReply
		err := e.call(events.OpRevision, events.ListRequest{Caller: newCaller()}, &r)
		if err == nil && natstest.ServiceReady(e.nc, Name) {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("artifacts not serving: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func newCaller() events.Caller {
	return events.Caller{TenantID: uuid.NewString(), UserID: uuid.NewString(), Role: "admin"}
}

// call sends req to op with the token its real caller would send: a
// caller token for the body's caller, or for the operations that act for a
// run a dispatch token bound to what the body asks for (tokenFor).
func (e *env) call(op string, req, resp any) error {
	subject, _ := events.ServiceSubject(events.ArtifactsService, op)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return svc.Call(svc.WithToken(ctx, tokenFor(e.t, op, req)), e.nc, subject, req, resp)
}

func (e *env) must(op string, req, resp any) {
	e.t.Helper()
	if err := e.call(op, req, resp); err != nil {
		e.t.Fatalf("%s: %v", op, err)
	}
}

func status(err error) int {
	var ae *events.APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

func (e *env) putSkill(c events.Caller, slug, body string, triggers ...string) events.Skill {
	e.t.Helper()
	var s events.Skill
	e.must(events.OpSkillsPut, events.SkillPut{Caller: c, Skill: events.Skill{Slug: slug, Description: "The " + slug + " skill.",
		Triggers: triggers, Body: body}}, &s)
	return s
}

func TestSkillCRUDKeepsUnknownKeysAndBumpsTheRevision(t *testing.T) {
	e := start(t)
	c := newCaller()
	doc := "---\nname: review\ndescription: Reviews.\nx-vendor: keep me\n---\nBody\n"
	var s events.Skill
	e.must(events.OpSkillsPut, events.SkillPut{Caller: c, Skill: events.Skill{Slug: "review"}, Document: doc}, &s)
	if !s.Enabled || s.Description != "Reviews." {
		t.Fatalf("created %+v", s)
	}
	kv, err := e.js.KeyValue(context.Background(), events.BucketArtifactRev)
	if err != nil {
		t.Fatal(err)
	}
	rev := func() string {
		en, err := kv.Get(context.Background(), c.TenantID)
		if err != nil {
			return "none"
		}
		return string(en.Value())
	}
	if got := rev(); got != "1" {
		t.Errorf("artifact_rev after one change = %s, want 1", got)
	}
	off := false
	e.must(events.OpSkillsPut, events.SkillPut{Caller: c, Skill: events.Skill{Slug: "review", Description: "Reviews code.",
		Body: "New body\n"}, Enabled: &off}, &s)
	b, err := os.ReadFile(filepath.Join(e.dataDir, "artifacts", c.TenantID, "skills", "review", "SKILL.md"))
	if err != nil || !strings.Contains(string(b), "x-vendor: keep me\n") || !strings.Contains(string(b), "New body") {
		t.Errorf("SKILL.md on disk = %q, %v", b, err)
	}
	var got events.Skill
	e.must(events.OpSkillsGet, events.ArtifactRef{Caller: c, Slug: "review"}, &got)
	if got.Enabled || got.Description != "Reviews code." || got.Body != "New body\n" {
		t.Errorf("get = %+v", got)
	}
	if r := rev(); r != "2" {
		t.Errorf("artifact_rev = %s, want 2", r)
	}
	err = e.call(events.OpSkillsPut, events.SkillPut{Caller: c, Skill: events.Skill{Slug: "../etc", Description: "x"}}, &s)
	if status(err) != http.StatusBadRequest {
		t.Errorf("traversal slug: %v", err)
	}
	err = e.call(events.OpSkillsPut, events.SkillPut{Caller: c, Skill: events.Skill{Slug: "a"}, Document: "---\nname: b\ndescription: d\n---\n"}, &s)
	if status(err) != http.StatusBadRequest {
		t.Errorf("name != slug: %v", err)
	}
	e.must(events.OpSkillsDelete, events.ArtifactRef{Caller: c, Slug: "review"}, nil)
	if _, err := os.Stat(filepath.Join(e.dataDir, "artifacts", c.TenantID, "skills", "review")); !os.IsNotExist(err) {
		t.Errorf("skill folder left after delete: %v", err)
	}
	if err := e.call(events.OpSkillsGet, events.ArtifactRef{Caller: c, Slug: "review"}, &got); status(err) != http.StatusNotFound {
		t.Errorf("get deleted: %v", err)
	}
}

// TestTenantsAreIsolated: tenant B can neither read nor change anything of
// tenant A through any operation.
func TestTenantsAreIsolated(t *testing.T) {
	e := start(t)
	a, b := newCaller(), newCaller()
	e.putSkill(a, "secret", "A's body")
	e.must(events.OpSubagentsPut, events.SubagentPut{Caller: a, Subagent: events.Subagent{Slug: "helper", Description: "A's helper"}}, nil)
	e.must(events.OpInstructionsPut, events.InstructionsPut{Caller: a, Instructions: events.Instructions{Scope: "global", Content: "A only", Enabled: true}}, nil)
	e.must(events.OpPermissionsPut, events.PermissionsPut{Caller: a, Set: events.PermissionSet{Scope: "global",
		PermissionRules: events.PermissionRules{Deny: []string{"Bash"}}}}, nil)
	var prof events.Profile
	e.must(events.OpProfilesPut, events.ProfilePut{Caller: a, Profile: events.Profile{Name: "A profile",
		Items: []events.ProfileItem{{Type: "skill", Ref: "secret"}}}}, &prof)
	var prov events.Provider
	e.must(events.OpProvidersPut, events.ProviderPut{Caller: a, Provider: events.Provider{Engine: events.EngineClaudeCode, Slug: "anthropic", Name: "Anthropic"}}, &prov)
	cred := "sk-a"
	var acc events.Account
	e.must(events.OpAccountsPut, events.AccountPut{Caller: a, Account: events.Account{ProviderID: prov.ID, Name: "main"}, Credential: &cred}, &acc)

	notFound := []struct {
		op  string
		req any
	}{
		{events.OpSkillsGet, events.ArtifactRef{Caller: b, Slug: "secret"}},
		{events.OpSkillsDelete, events.ArtifactRef{Caller: b, Slug: "secret"}},
		{events.OpSubagentsGet, events.ArtifactRef{Caller: b, Slug: "helper"}},
		{events.OpSubagentsDelete, events.ArtifactRef{Caller: b, Slug: "helper"}},
		{events.OpProfilesGet, events.ProfileRef{Caller: b, ID: prof.ID}},
		{events.OpProfilesDelete, events.ProfileRef{Caller: b, ID: prof.ID}},
		{events.OpProfilesPut, events.ProfilePut{Caller: b, Profile: events.Profile{ID: prof.ID, Name: "stolen"}}},
		{events.OpProfileDefaultSet, events.ProjectDefault{Caller: b, ProjectID: "p", ProfileID: prof.ID}},
		{events.OpProvidersDelete, events.RefByID{Caller: b, ID: prov.ID}},
		{events.OpProvidersPut, events.ProviderPut{Caller: b, Provider: events.Provider{ID: prov.ID, Engine: events.EngineClaudeCode, Slug: "x", Name: "x"}}},
		{events.OpAccountsPut, events.AccountPut{Caller: b, Account: events.Account{ID: acc.ID, ProviderID: prov.ID, Name: "x"}}},
		{events.OpAccountsPut, events.AccountPut{Caller: b, Account: events.Account{ProviderID: prov.ID, Name: "new"}}},
		{events.OpAccountsDelete, events.RefByID{Caller: b, ID: acc.ID}},
		{events.OpAccountsActivate, events.RefByID{Caller: b, ID: acc.ID}},
		{events.OpAccountsList, events.ProviderAccounts{Caller: b, ProviderID: prov.ID}},
		{events.OpAccountsResolve, events.AccountResolve{Caller: b, Engine: events.EngineClaudeCode, AccountID: acc.ID}},
		{events.OpAccountsResolve, events.AccountResolve{Caller: b, Engine: events.EngineClaudeCode}},
	}
	for _, tt := range notFound {
		if err := e.call(tt.op, tt.req, nil); status(err) != http.StatusNotFound {
			t.Errorf("tenant B %s = %v, want 404", tt.op, err)
		}
	}
	// Lists and contents of B show nothing of A.
	var skills []events.Skill
	e.must(events.OpSkillsList, events.ListRequest{Caller: b}, &skills)
	var provs []events.Provider
	e.must(events.OpProvidersList, events.ListRequest{Caller: b}, &provs)
	var content events.Content
	e.must(events.OpContent, events.ContentRequest{Caller: b, Engine: events.EngineScripted, ProfileID: prof.ID}, &content)
	var in events.Instructions
	e.must(events.OpInstructionsGet, events.InstructionsRef{Caller: b, Scope: "global"}, &in)
	var perms events.PermissionRules
	e.must(events.OpPermissionsResolve, events.PermissionsResolve{Caller: b}, &perms)
	var exp events.ExpandReply
	e.must(events.OpExpand, events.ExpandRequest{Caller: b, Prompt: events.Blocks{events.TextBlock{Text: "/secret"}}}, &exp)
	if len(skills)+len(provs) > 0 || contentMentions(content, "secret") || contentMentions(content, "A only") ||
		in.Content != "" || len(perms.Deny) > 0 || exp.ExpandedSkill != "" {
		t.Errorf("tenant B sees A: skills %v providers %v instructions %q perms %v expand %q", skills, provs, in.Content, perms, exp.ExpandedSkill)
	}
	// A's artifacts are untouched.
	var got events.Skill
	e.must(events.OpSkillsGet, events.ArtifactRef{Caller: a, Slug: "secret"}, &got)
	var p events.Profile
	e.must(events.OpProfilesGet, events.ProfileRef{Caller: a, ID: prof.ID}, &p)
	if p.Name != "A profile" {
		t.Errorf("A's profile renamed to %q", p.Name)
	}
	if err := e.call(events.OpSkillsList, events.ListRequest{Caller: events.Caller{TenantID: "not-a-uuid"}}, nil); status(err) != http.StatusBadRequest {
		t.Errorf("bad tenant id: %v", err)
	}
}

// contentMentions reports whether any text of c holds s.
func contentMentions(c events.Content, s string) bool {
	texts := []string{c.SkillsIndex, c.SubagentsIndex, c.Instructions, c.InstructionsSection, c.ProjectSection}
	for _, sk := range c.Skills {
		texts = append(texts, slices.Collect(maps.Values(sk.Files))...)
	}
	for _, sa := range c.Subagents {
		texts = append(texts, slices.Collect(maps.Values(sa.Documents))...)
	}
	return slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(t, s) })
}

// TestPermissionsScenario92 goes through the service: layers saved with
// permissions.put and merged by permissions.resolve and the content.
func TestPermissionsScenario92(t *testing.T) {
	e := start(t)
	c := newCaller()
	project := uuid.NewString()
	put := func(set events.PermissionSet) {
		e.must(events.OpPermissionsPut, events.PermissionsPut{Caller: c, Set: set}, nil)
	}
	put(events.PermissionSet{Scope: "global", PermissionRules: events.PermissionRules{Deny: []string{"Bash"}}})
	put(events.PermissionSet{Scope: "project", ProjectID: project, PermissionRules: events.PermissionRules{Allow: []string{"Read", " Read "}}})
	var got events.PermissionRules
	e.must(events.OpPermissionsResolve, events.PermissionsResolve{Caller: c, ProjectID: project}, &got)
	if strings.Join(got.Deny, ",") != "Bash" || strings.Join(got.Allow, ",") != "Read" {
		t.Errorf("project rules = %+v, want allow [Read] deny [Bash]", got)
	}
	var prof events.Profile
	e.must(events.OpProfilesPut, events.ProfilePut{Caller: c, Profile: events.Profile{Name: "Editors"}}, &prof)
	put(events.PermissionSet{Scope: "profile", ProfileID: prof.ID, PermissionRules: events.PermissionRules{Allow: []string{"Edit"}}})
	var content events.Content
	e.must(events.OpContent, events.ContentRequest{Caller: c, Engine: events.EngineClaudeCode, ProjectID: project, ProfileID: prof.ID}, &content)
	if strings.Join(content.Permissions.Deny, ",") != "Bash" || strings.Join(content.Permissions.Allow, ",") != "Edit" {
		t.Errorf("profile rules = %+v, want allow [Edit] deny [Bash]", content.Permissions)
	}
	// The project default profile applies when the run names none.
	e.must(events.OpProfileDefaultSet, events.ProjectDefault{Caller: c, ProjectID: project, ProfileID: prof.ID}, nil)
	e.must(events.OpPermissionsResolve, events.PermissionsResolve{Caller: c, ProjectID: project}, &got)
	if strings.Join(got.Allow, ",") != "Edit" {
		t.Errorf("with the project default profile: %+v", got)
	}
	// Saving empty lists deletes the layer.
	put(events.PermissionSet{Scope: "global"})
	var set events.PermissionSet
	e.must(events.OpPermissionsGet, events.PermissionsRef{Caller: c, Scope: "global"}, &set)
	var n int
	_ = e.db.QueryRow(context.Background(), `SELECT count(*) FROM artifacts.permission_sets WHERE tenant_id = $1 AND scope = 'global'`, c.TenantID).Scan(&n)
	if len(set.Deny) != 0 || n != 0 {
		t.Errorf("empty save kept the layer: %+v, %d rows", set, n)
	}
	if err := e.call(events.OpPermissionsPut, events.PermissionsPut{Caller: c, Set: events.PermissionSet{Scope: "global",
		PermissionRules: events.PermissionRules{Deny: []string{"a*b"}}}}, nil); status(err) != http.StatusBadRequest {
		t.Errorf("inner wildcard: %v", err)
	}
}

// TestForgetProject deletes what a project's deletion must not leave behind,
// and nothing of another project or another tenant with the same project id.
func TestForgetProject(t *testing.T) {
	e := start(t)
	a, b := newCaller(), newCaller()
	project, other := uuid.NewString(), uuid.NewString()
	var prof events.Profile
	e.must(events.OpProfilesPut, events.ProfilePut{Caller: a, Profile: events.Profile{Name: "Editors"}}, &prof)
	var bprof events.Profile
	e.must(events.OpProfilesPut, events.ProfilePut{Caller: b, Profile: events.Profile{Name: "B"}}, &bprof)
	seed := func(c events.Caller, p, profile string) {
		e.must(events.OpInstructionsPut, events.InstructionsPut{Caller: c, Instructions: events.Instructions{Scope: "project", ProjectID: p, Content: "keep tests green", Enabled: true}}, nil)
		e.must(events.OpPermissionsPut, events.PermissionsPut{Caller: c, Set: events.PermissionSet{Scope: "project", ProjectID: p,
			PermissionRules: events.PermissionRules{Deny: []string{"Bash"}}}}, nil)
		e.must(events.OpProfileDefaultSet, events.ProjectDefault{Caller: c, ProjectID: p, ProfileID: profile}, nil)
	}
	seed(a, project, prof.ID)
	seed(a, other, prof.ID)
	seed(b, project, bprof.ID) // the same project id in another tenant
	e.must(events.OpInstructionsPut, events.InstructionsPut{Caller: a, Instructions: events.Instructions{Scope: "global", Content: "global", Enabled: true}}, nil)

	rows := func(c events.Caller, p string) int {
		var n int
		err := e.db.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM artifacts.instructions WHERE tenant_id = $1 AND project_id = $2) +
			(SELECT count(*) FROM artifacts.permission_sets WHERE tenant_id = $1 AND project_id = $2) +
			(SELECT count(*) FROM artifacts.project_defaults WHERE tenant_id = $1 AND project_id = $2)`, c.TenantID, p).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var before, after events.RevisionReply
	e.must(events.OpRevision, events.ListRequest{Caller: a}, &before)
	e.must(events.OpProjectForget, events.ProjectRef{Caller: a, ProjectID: project}, nil)
	e.must(events.OpRevision, events.ListRequest{Caller: a}, &after)
	if n := rows(a, project); n != 0 {
		t.Errorf("%d rows of the forgotten project remain", n)
	}
	if n := rows(a, other); n != 3 {
		t.Errorf("the other project has %d rows, want 3", n)
	}
	if n := rows(b, project); n != 3 {
		t.Errorf("tenant B's project of the same id has %d rows, want 3", n)
	}
	var in events.Instructions
	e.must(events.OpInstructionsGet, events.InstructionsRef{Caller: a, Scope: "global"}, &in)
	if in.Content != "global" {
		t.Errorf("global instructions = %q", in.Content)
	}
	if after.Revision <= before.Revision {
		t.Errorf("revision %d -> %d: workers would keep the project's old layers", before.Revision, after.Revision)
	}
	// Again: nothing to delete is not an error, so a retried deletion goes through.
	e.must(events.OpProjectForget, events.ProjectRef{Caller: a, ProjectID: project}, nil)
	if err := e.call(events.OpProjectForget, events.ProjectRef{Caller: a}, nil); status(err) != http.StatusBadRequest {
		t.Errorf("no project id: %v", err)
	}
}
