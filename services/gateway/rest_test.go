package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// rawDo sends a request with an optional bearer key and returns the status,
// the headers and the decoded error body, if any.
func rawDo(t *testing.T, method, url, key string, body []byte) (int, http.Header, api.Error) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e api.Error
	_ = json.Unmarshal(data, &e)
	return resp.StatusCode, resp.Header, e
}

func TestRESTFlow(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()

	me, err := a.member.c.Me(ctx)
	if err != nil || me.User.ID != a.member.user.ID || me.Tenant.Slug != "acme" {
		t.Fatalf("Me = %+v, %v", me, err)
	}
	ps, err := a.member.c.Projects(ctx)
	if err != nil || len(ps) != 1 || ps[0].ID != a.project.ID || ps[0].Role != api.ProjectMember {
		t.Errorf("member Projects = %+v, %v", ps, err)
	}
	if ps, _ := a.outsider.c.Projects(ctx); len(ps) != 0 {
		t.Errorf("outsider Projects = %+v, want none", ps)
	}
	ss, err := a.member.c.Sessions(ctx, a.project.ID, 0)
	if err != nil || len(ss) != 1 || ss[0].ID != a.session.ID {
		t.Errorf("Sessions = %+v, %v", ss, err)
	}
	title := "renamed"
	s, err := a.member.c.UpdateSession(ctx, a.session.ID, api.UpdateSession{Title: &title})
	if err != nil || s.Title != title {
		t.Errorf("UpdateSession = %+v, %v", s, err)
	}
	msgs, err := a.member.c.Messages(ctx, a.session.ID, "", 0)
	if err != nil || len(msgs.Messages) != 1 {
		t.Errorf("Messages = %+v, %v", msgs, err)
	}
	runs, err := a.member.c.Runs(ctx, a.session.ID, 0)
	if err != nil || len(runs) != 1 || runs[0].ID != a.runID {
		t.Errorf("Runs = %+v, %v", runs, err)
	}
	if r, err := a.member.c.Run(ctx, a.runID); err != nil || r.SessionID != a.session.ID {
		t.Errorf("Run = %+v, %v", r, err)
	}
	var apiErr *events.APIError
	if _, err := a.member.c.Retry(ctx, a.runID); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict ||
		!strings.Contains(apiErr.Message, "only a lost run") {
		t.Errorf("Retry of a run that is not lost = %v, want 409 naming its state", err)
	}
	if evs, err := a.member.c.RunEvents(ctx, a.runID, 0, 0, 10); err != nil || len(evs) != 1 {
		t.Errorf("RunEvents = %+v, %v", evs, err)
	}
	if snap, err := a.member.c.Snapshot(ctx, a.session.ID); err != nil || snap.Session.ID != a.session.ID || snap.Cursor == 0 {
		t.Errorf("Snapshot = %+v, %v", snap, err)
	}
	if ack, err := a.member.c.Cancel(ctx, a.session.ID, a.runID); err != nil || !strings.Contains(string(ack), `"accepted":true`) {
		t.Errorf("Cancel = %s, %v", ack, err)
	}
	if _, err := a.member.c.Interrupt(ctx, a.session.ID, ""); err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	if _, err := a.member.c.Answer(ctx, a.session.ID, api.Answer{ToolUseID: "toolu_1", Decision: "allow"}); err != nil {
		t.Errorf("Answer: %v", err)
	}
	_, err = a.member.c.Answer(ctx, a.session.ID, api.Answer{ToolUseID: "toolu_1", Decision: "maybe"})
	wantStatus(t, "answer with a bad decision", err, http.StatusBadRequest)

	// Members may use but not manage a project.
	name := "nope"
	_, err = a.member.c.UpdateProject(ctx, a.project.ID, api.UpdateProject{Name: &name})
	wantStatus(t, "member renames project", err, http.StatusForbidden)
	_, err = a.member.c.Users(ctx)
	wantStatus(t, "member lists users", err, http.StatusForbidden)
	// The last owner cannot leave.
	err = a.admin.c.RemoveMember(ctx, a.project.ID, a.admin.user.ID)
	wantStatus(t, "remove the last owner", err, http.StatusConflict)

	// Deleting a project deletes its sessions and its artifact layers first.
	layer := client.Layer{ProjectID: a.project.ID}
	if _, err := a.admin.c.PutInstructions(ctx, layer, api.InstructionsInput{Content: "run the tests"}); err != nil {
		t.Fatalf("PutInstructions: %v", err)
	}
	if _, err := a.admin.c.PutPermissions(ctx, layer, events.PermissionRules{Deny: []string{"Bash"}}); err != nil {
		t.Fatalf("PutPermissions: %v", err)
	}
	if err := a.admin.c.DeleteProject(ctx, a.project.ID); err != nil {
		t.Fatalf("DeleteProject: %v", err)
	}
	_, err = a.admin.c.Session(ctx, a.session.ID)
	wantStatus(t, "session of a deleted project", err, http.StatusNotFound)
	var left int
	if err := e.db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM artifacts.instructions WHERE project_id = $1) +
		(SELECT count(*) FROM artifacts.permission_sets WHERE project_id = $1)`, a.project.ID).Scan(&left); err != nil || left != 0 {
		t.Errorf("artifact rows of the deleted project: %d, %v", left, err)
	}
}

func TestAPIKeys(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()

	k, err := a.member.c.CreateAPIKey(ctx, api.CreateAPIKey{Name: "laptop"})
	if err != nil || !strings.HasPrefix(k.Key, "clp_") || len(k.Key) != 47 || k.Prefix != k.Key[:12] {
		t.Fatalf("CreateAPIKey = %+v, %v", k, err)
	}
	keys, err := a.member.c.APIKeys(ctx, "")
	if err != nil || len(keys) != 2 {
		t.Fatalf("APIKeys = %+v, %v", keys, err)
	}
	body, _ := json.Marshal(keys)
	if bytes.Contains(body, []byte(k.Key)) {
		t.Error("the key list contains a secret")
	}
	var stored int
	if err := e.db.QueryRow(ctx, `SELECT count(*) FROM gateway.api_keys WHERE prefix = $1 AND hash <> $2::bytea`, k.Prefix, []byte(k.Key)).Scan(&stored); err != nil || stored != 1 {
		t.Errorf("stored key rows = %d, %v", stored, err)
	}

	_, err = a.member.c.APIKeys(ctx, a.admin.user.ID)
	wantStatus(t, "member lists the admin's keys", err, http.StatusForbidden)
	_, err = a.member.c.CreateAPIKey(ctx, api.CreateAPIKey{UserID: a.admin.user.ID})
	wantStatus(t, "member mints a key for the admin", err, http.StatusForbidden)
	err = a.member.c.RevokeAPIKey(ctx, a.admin.keyID)
	wantStatus(t, "member revokes the admin's key", err, http.StatusNotFound)
	if keys, err := a.admin.c.APIKeys(ctx, a.member.user.ID); err != nil || len(keys) != 2 {
		t.Errorf("admin lists member's keys = %d, %v", len(keys), err)
	}
	if _, err := a.admin.c.CreateAPIKey(ctx, api.CreateAPIKey{UserID: a.member.user.ID, Name: "for member"}); err != nil {
		t.Errorf("admin mints a member key: %v", err)
	}
	if err := a.admin.c.RevokeAPIKey(ctx, k.ID); err != nil {
		t.Errorf("admin revokes member key: %v", err)
	}
}

func TestRequestBodies(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.MaxBodyBytes = 4096; c.MaxPromptBytes = 100 })
	a := e.newTenant(t, "acme")
	url := e.url + "/v1/sessions/" + a.session.ID + "/messages"

	tests := []struct {
		name       string
		give       string
		wantStatus int
		wantCode   string
		wantMsg    string
	}{
		{"unknown field", `{"text":"hi","tenantId":"other"}`, 400, "invalid_request", `unknown field "tenantId"`},
		{"wrong type", `{"text":5}`, 400, "invalid_request", `field "text"`},
		{"malformed", `{"text":`, 400, "invalid_request", "JSON"},
		{"two values", `{"text":"a"} {"text":"b"}`, 400, "invalid_request", "more than one"},
		{"empty", ``, 400, "invalid_request", "empty"},
		{"both text and prompt", `{"text":"a","prompt":[{"type":"text","text":"b"}]}`, 400, "invalid_request", "not both"},
		{"tool result block", `{"prompt":[{"type":"tool_result","toolUseId":"x","content":"","isError":false}]}`, 400, "invalid_request", "cannot be sent"},
		{"unknown engine", `{"text":"a","engine":"gpt"}`, 400, "invalid_request", "engine"},
		{"prompt too large", `{"text":"` + strings.Repeat("x", 101) + `"}`, 413, "too_large", "limit is 100"},
		{"body too large", `{"text":"` + strings.Repeat("x", 5000) + `"}`, 413, "too_large", "4096"},
		{"ok", `{"text":"hi"}`, 202, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := rawDo(t, "POST", url, a.member.key, []byte(tt.give))
			if status != tt.wantStatus || body.Error.Code != tt.wantCode || !strings.Contains(body.Error.Message, tt.wantMsg) {
				t.Errorf("POST %s = %d %+v, want %d %s containing %q", tt.give, status, body.Error, tt.wantStatus, tt.wantCode, tt.wantMsg)
			}
		})
	}
}
