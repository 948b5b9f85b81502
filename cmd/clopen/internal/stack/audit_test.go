package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
	"clopen.dev/services/streammgr"
)

// TestTheAuditLogRecordsEveryChange makes, as tenant A's admin, every kind
// of change the audit log covers — API keys, users, members and roles,
// projects and their sources, skills, subagents, instructions, permissions,
// profiles, providers, accounts and their credentials, source credentials,
// MCP servers, budgets — and reads the log back over REST: each change has its entry,
// with the actor, the action, the target and its state before and after;
// no secret used in the test is anywhere in the three services' audit
// tables; pages of five add up to the whole log; the export says the same
// as JSON lines and as CSV; tenant B sees none of it and a member of A may
// not read it.
func TestTheAuditLogRecordsEveryChange(t *testing.T) {
	root := t.TempDir()
	_, privHead := fixtureRepo(t, root, "priv")
	const gitSecret = "audit-git-s3cret-value"
	gitURL, ca := privateGit(t, root, "x-token", gitSecret)
	dir := t.TempDir()
	wc := worker.DefaultConfig()
	wc.Workspaces, wc.GitCAFile = dir, ca
	h := start(t, Config{Dir: dir, Worker: wc, Gateway: unthrottled()})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	a, b := h.account("audit-a"), h.account("audit-b")
	me, err := a.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Identity: keys, users, members.
	k, err := a.c.CreateAPIKey(ctx, api.CreateAPIKey{Name: "ci"})
	must("mint a key", err)
	must("revoke it", a.c.RevokeAPIKey(ctx, k.ID))
	bob, err := a.c.CreateUser(ctx, api.CreateUser{Email: "bob@audit-a", Name: "Bob", Role: "member"})
	must("add a user", err)
	_, err = a.c.AddMember(ctx, a.project.ID, api.AddMember{UserID: bob.ID, Role: api.ProjectMember})
	must("add a member", err)
	_, err = a.c.AddMember(ctx, a.project.ID, api.AddMember{UserID: bob.ID, Role: api.ProjectOwner})
	must("make the member an owner", err)
	must("remove the member", a.c.RemoveMember(ctx, a.project.ID, bob.ID))

	// Projects: rename, an archive, a private git source, deletion.
	name := "renamed"
	_, err = a.c.UpdateProject(ctx, a.project.ID, api.UpdateProject{Name: &name})
	must("rename the project", err)
	_, err = a.c.UploadArchive(ctx, a.project.ID, "", bytes.NewReader(tarGzOf(t, "hello.txt", "hi\n")))
	must("upload an archive", err)
	cred := "x-token:" + gitSecret
	priv, err := a.c.CreateProject(ctx, api.CreateProject{Name: "priv",
		Source: &api.SourceInput{Kind: api.SourceGit, URL: gitURL + "/priv.git", Credential: &cred}})
	must("import a private repository", err)
	if priv.BaseCommit != privHead {
		t.Fatalf("private project at %s, want %s", priv.BaseCommit, privHead)
	}
	must("delete the private project", a.c.DeleteProject(ctx, priv.ID))

	// Artifacts.
	_, err = a.c.CreateSkill(ctx, api.SkillInput{Slug: "lint", Description: "Lint the code"})
	must("create a skill", err)
	must("delete the skill", a.c.DeleteSkill(ctx, "lint"))
	_, err = a.c.CreateSubagent(ctx, api.SubagentInput{Slug: "reviewer", Description: "Reviews", Body: "Review the diff."})
	must("create a subagent", err)
	must("delete the subagent", a.c.DeleteSubagent(ctx, "reviewer"))
	_, err = a.c.PutInstructions(ctx, client.Layer{}, api.InstructionsInput{Content: "Be brief."})
	must("set instructions", err)
	_, err = a.c.PutPermissions(ctx, client.Layer{ProjectID: a.project.ID}, events.PermissionRules{Deny: []string{"Bash"}})
	must("set permissions", err)
	prof, err := a.c.CreateProfile(ctx, api.ProfileInput{Name: "Strict"})
	must("create a profile", err)
	_, err = a.c.SetDefaultProfile(ctx, a.project.ID, prof.ID)
	must("set the default profile", err)
	must("delete the profile", a.c.DeleteProfile(ctx, prof.ID))
	// A secret put where none belongs (a provider's options) is stored with
	// the provider, and still kept out of the log.
	const optionSecret = "opt-secret-0123456789abcdef"
	pv, err := a.c.CreateProvider(ctx, api.ProviderInput{Engine: events.EngineClaudeCode, Slug: "anthropic", Name: "Anthropic",
		Options: map[string]string{"authToken": optionSecret, "region": "eu"}})
	must("create a provider", err)
	var stored string
	must("read the provider row", h.st.DB.QueryRow(ctx, `SELECT options::text FROM artifacts.engine_providers WHERE id = $1`, pv.ID).Scan(&stored))
	if !strings.Contains(stored, optionSecret) {
		t.Fatalf("the provider's options %s do not hold the secret the test gave", stored)
	}
	const accountSecret = "sk-ant-api03-AUDIT-account-secret-0123456789"
	acc, err := a.c.CreateAccount(ctx, pv.ID, api.AccountInput{Name: "team"})
	must("create an account", err)
	secret := accountSecret
	_, err = a.c.ReplaceAccount(ctx, acc.ID, api.AccountInput{Name: "team", Credential: &secret})
	must("set its credential", err)
	must("activate it", a.c.ActivateAccount(ctx, acc.ID))
	must("delete it", a.c.DeleteAccount(ctx, acc.ID))
	must("delete the provider", a.c.DeleteProvider(ctx, pv.ID))
	// An MCP server: its header and a project server's env are sealed, and
	// the log names them only.
	const mcpSecret = "mcp-header-AUDIT-secret-0123456789"
	_, err = a.c.CreateMCPServer(ctx, client.Layer{}, api.MCPServerInput{Slug: "docs", Transport: events.MCPHTTP,
		URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer " + mcpSecret}})
	must("add an MCP server", err)
	_, err = a.c.CreateMCPServer(ctx, client.Layer{ProjectID: a.project.ID}, api.MCPServerInput{Slug: "local",
		Transport: events.MCPStdio, Command: "local-server", Env: map[string]string{"TOKEN": mcpSecret}})
	must("add a project MCP server", err)
	must("delete the MCP server", a.c.DeleteMCPServer(ctx, client.Layer{}, "docs"))

	// A budget, set by the operator.
	must("set a budget", streammgr.SetTenantBudget(ctx, h.st.DB, me.Tenant.ID,
		events.Budget{Unit: events.BudgetUSD, Period: events.PeriodMonth, Limit: 50}, false, audit.Operator))

	entries := auditAll(t, ctx, a.c, url.Values{"limit": {"500"}})
	admin := events.AuditActor{ID: me.User.ID, Name: me.User.Name}
	want := []struct {
		action, targetType string
		actor              events.AuditActor
		before, after      map[string]any // fields the state must hold; nil: the state is null
	}{
		{"tenant.create", "tenant", audit.Operator, nil, map[string]any{"slug": "audit-a"}},
		{"user.create", "user", audit.Operator, nil, map[string]any{"email": "admin@audit-a", "role": "admin"}}, // the harness's admin
		{"apikey.create", "apikey", audit.Operator, nil, map[string]any{"name": "test"}},                        // and key
		{"project.create", "project", admin, nil, map[string]any{"name": "main"}},
		{"apikey.create", "apikey", admin, nil, map[string]any{"name": "ci", "prefix": k.Prefix}},
		{"apikey.revoke", "apikey", admin, map[string]any{"name": "ci"}, map[string]any{"name": "ci"}},
		{"user.create", "user", admin, nil, map[string]any{"email": "bob@audit-a", "role": "member"}},
		{"member.add", "project", admin, nil, map[string]any{"userId": bob.ID, "role": "member"}},
		{"member.update", "project", admin, map[string]any{"role": "member"}, map[string]any{"role": "owner"}},
		{"member.remove", "project", admin, map[string]any{"userId": bob.ID, "role": "owner"}, nil},
		{"project.update", "project", admin, map[string]any{"name": "main"}, map[string]any{"name": "renamed"}},
		{"project.archive.upload", "project", admin, map[string]any{"name": "renamed"}, map[string]any{"name": "renamed"}},
		{"project.create", "project", admin, nil, map[string]any{"name": "priv"}},
		{"source_credential.set", "source_credential", admin, nil, map[string]any{"projectId": priv.ID}},
		{"project.source.set", "project", admin, map[string]any{"name": "priv"}, map[string]any{"baseCommit": privHead}},
		{"project.artifacts.delete", "project", admin, map[string]any{"hasSourceCredential": true}, map[string]any{"hasSourceCredential": false}},
		{"project.delete", "project", admin, map[string]any{"name": "priv"}, nil},
		{"skill.put", "skill", admin, nil, map[string]any{"slug": "lint", "description": "Lint the code"}},
		{"skill.delete", "skill", admin, map[string]any{"slug": "lint"}, nil},
		{"subagent.put", "subagent", admin, nil, map[string]any{"slug": "reviewer", "body": "Review the diff."}},
		{"subagent.delete", "subagent", admin, map[string]any{"slug": "reviewer"}, nil},
		{"instructions.set", "instructions", admin, nil, map[string]any{"content": "Be brief."}},
		{"permissions.set", "permissions", admin, nil, map[string]any{"deny": []any{"Bash"}}},
		{"profile.create", "profile", admin, nil, map[string]any{"name": "Strict"}},
		{"project.default_profile.set", "project", admin, map[string]any{"defaultProfileId": nil}, map[string]any{"defaultProfileId": prof.ID}},
		{"profile.delete", "profile", admin, map[string]any{"name": "Strict"}, nil},
		{"project.update", "project", admin, map[string]any{"defaultProfileId": prof.ID}, map[string]any{"defaultProfileId": nil}},
		{"provider.create", "provider", admin, nil, map[string]any{"slug": "anthropic",
			"options": map[string]any{"authToken": events.AuditRedacted, "region": "eu"}}},
		{"account.create", "account", admin, nil, map[string]any{"name": "team", "hasCredential": false}},
		{"account.credential.set", "account", admin, map[string]any{"hasCredential": false}, map[string]any{"hasCredential": true}},
		{"account.activate", "account", admin, map[string]any{"name": "team"}, map[string]any{"active": true}},
		{"account.delete", "account", admin, map[string]any{"name": "team"}, nil},
		{"provider.delete", "provider", admin, map[string]any{"slug": "anthropic"}, nil},
		{"mcp_server.put", "mcp_server", admin, nil, map[string]any{"slug": "docs", "headerNames": []any{"Authorization"}}},
		{"mcp_server.put", "mcp_server", admin, nil, map[string]any{"projectId": a.project.ID, "slug": "local", "envNames": []any{"TOKEN"}}},
		{"mcp_server.delete", "mcp_server", admin, map[string]any{"slug": "docs"}, nil},
		{"budget.set", "budget", audit.Operator, nil, map[string]any{"unit": "usd", "period": "month", "limit": float64(50)}},
	}
	// The log is newest first; the table is in the order the changes were made.
	oldest := make([]events.AuditEntry, len(entries))
	for i, e := range entries {
		oldest[len(entries)-1-i] = e
	}
	var i int
	for _, w := range want {
		for i < len(oldest) && oldest[i].Action != w.action {
			i++ // an entry the table does not list (a project's artifacts forgotten on a first delete, say)
		}
		if i == len(oldest) {
			t.Errorf("no %s entry in order; the log: %s", w.action, actions(oldest))
			break
		}
		e := oldest[i]
		i++
		if e.Target.Type != w.targetType || e.Actor != w.actor {
			t.Errorf("%s: target %+v by %+v, want a %s by %+v", w.action, e.Target, e.Actor, w.targetType, w.actor)
		}
		checkState(t, w.action+" before", e.Before, w.before)
		checkState(t, w.action+" after", e.After, w.after)
	}

	// No secret of the test is in any audit table.
	var dump string
	must("read the audit tables", h.st.DB.QueryRow(ctx, `SELECT concat_ws(E'\n',
		(SELECT string_agg(t::text, E'\n') FROM gateway.audit_log t),
		(SELECT string_agg(t::text, E'\n') FROM artifacts.audit_log t),
		(SELECT string_agg(t::text, E'\n') FROM streammgr.audit_log t))`).Scan(&dump))
	for _, s := range []string{accountSecret, gitSecret, optionSecret, mcpSecret, k.Key, a.key} {
		if strings.Contains(dump, s) {
			t.Errorf("the audit tables hold the secret %q", s)
		}
	}
	if !strings.Contains(dump, "account.credential.set") {
		t.Fatal("the dump is not the audit tables")
	}

	// A change that fails records nothing.
	var apiErr *events.APIError
	if err := a.c.RemoveMember(ctx, a.project.ID, me.User.ID); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("removing the last owner = %v, want 409", err)
	}
	if _, err := a.c.CreateUser(ctx, api.CreateUser{Email: "bob@audit-a", Name: "Bob again"}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("a second user with one email = %v, want 409", err)
	}
	if _, err := a.c.CreateSkill(ctx, api.SkillInput{Slug: "Not A Slug"}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("a skill with a bad slug = %v, want 400", err)
	}
	if after := auditAll(t, ctx, a.c, url.Values{"limit": {"500"}}); len(after) != len(entries) {
		t.Errorf("after the failed changes the log holds %d entries, before %d: %s", len(after), len(entries), actions(after))
	}

	// Pages of five add up to the whole log, in order.
	paged := auditAll(t, ctx, a.c, url.Values{"limit": {"5"}})
	if len(paged) != len(entries) {
		t.Fatalf("pages of 5 hold %d entries, the log %d", len(paged), len(entries))
	}
	for i := range paged {
		if paged[i].ID != entries[i].ID {
			t.Fatalf("paged entry %d is %s, want %s", i, paged[i].ID, entries[i].ID)
		}
	}
	// Filters.
	filtered := auditAll(t, ctx, a.c, url.Values{"action": {"account.*"}})
	if len(filtered) != 4 {
		t.Errorf("action=account.*: %s, want the account's four changes", actions(filtered))
	}
	if got := auditAll(t, ctx, a.c, url.Values{"actor": {events.AuditOperator}}); len(got) != 4 {
		t.Errorf("actor=operator: %s, want the tenant, the harness's admin and key, and the budget", actions(got))
	}
	if got := auditAll(t, ctx, a.c, url.Values{"targetType": {"project"}, "targetId": {priv.ID}}); len(got) != 4 {
		t.Errorf("the private project's entries: %s, want its creation, source, artifacts and deletion", actions(got))
	}

	// The export says the same, as JSON lines and as CSV.
	lines := export(t, ctx, h.st.URL, a.key, "jsonl")
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(lines))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e events.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.ID != entries[n].ID {
			t.Fatalf("export line %d = %s (%v), want entry %s", n, sc.Bytes(), err, entries[n].ID)
		}
		n++
	}
	if n != len(entries) {
		t.Errorf("the JSON lines export has %d entries, the log %d", n, len(entries))
	}
	rows, err := csv.NewReader(bytes.NewReader(export(t, ctx, h.st.URL, a.key, "csv"))).ReadAll()
	if err != nil || len(rows) != len(entries)+1 || rows[0][0] != "id" || rows[1][0] != entries[0].ID || rows[1][5] != entries[0].Action {
		t.Errorf("the CSV export: %d rows (%v), want a header and %d entries", len(rows), err, len(entries))
	}

	// Tenant B sees only its own; a member of A may not read A's.
	for _, e := range auditAll(t, ctx, b.c, url.Values{}) {
		if strings.Contains(e.Target.Name, "audit-a") || e.Target.ID == a.project.ID || e.Target.ID == me.Tenant.ID {
			t.Errorf("tenant B reads tenant A's entry %+v", e)
		}
	}
	if _, err := gateway.CreateUser(ctx, h.st.DB, "audit-a", api.CreateUser{Email: "m@audit-a", Name: "M", Role: "member"}); err != nil {
		t.Fatal(err)
	}
	mk, err := gateway.CreateKey(ctx, h.st.DB, "audit-a", "m@audit-a", "m")
	must("a member's key", err)
	if _, err := client.New(h.st.URL, mk.Key).Audit(ctx, nil); !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
		t.Errorf("a member's GET /v1/audit = %v, want 403", err)
	}
	if _, err := a.c.Audit(ctx, url.Values{"cursor": {"not-a-cursor"}}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("a forged cursor = %v, want 400", err)
	}
	if _, err := a.c.Audit(ctx, url.Values{"action": {"Drop Table"}}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Errorf("a malformed action filter = %v, want 400", err)
	}
}

// auditAll reads every page of the audit log matching q, newest first.
func auditAll(t *testing.T, ctx context.Context, c *client.Client, q url.Values) []events.AuditEntry {
	t.Helper()
	var out []events.AuditEntry
	for range 1000 {
		page, err := c.Audit(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Entries...)
		if page.NextCursor == "" {
			return out
		}
		q.Set("cursor", page.NextCursor)
	}
	t.Fatal("the audit log's pages never end")
	return nil
}

// export reads GET /v1/audit/export in format.
func export(t *testing.T, ctx context.Context, base, key, format string) []byte {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/audit/export?format="+format, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("export %s: %d %s", format, resp.StatusCode, body)
	}
	return body
}

// checkState checks that an entry's state holds the fields of want (nil:
// that it is null).
func checkState(t *testing.T, what string, got json.RawMessage, want map[string]any) {
	t.Helper()
	if want == nil {
		if string(got) != "null" {
			t.Errorf("%s = %s, want null", what, got)
		}
		return
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		t.Errorf("%s = %s, not an object", what, got)
		return
	}
	for k, v := range want {
		gv, ok := m[k]
		if v == nil && (!ok || gv == nil || gv == "") {
			continue // absent, null or empty
		}
		if b1, _ := json.Marshal(gv); string(b1) != mustMarshal(v) {
			t.Errorf("%s: %s = %s, want %s (in %s)", what, k, b1, mustMarshal(v), got)
		}
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func actions(es []events.AuditEntry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Action)
	}
	return strings.Join(out, " ")
}
