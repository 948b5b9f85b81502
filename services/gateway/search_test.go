package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"clopen.dev/services/gateway/api"
)

// TestSessionSearchOverREST: ?q= reaches streammgr as the list's query
// (which matches titles there), a query over 200 bytes is a 400 naming q,
// and another tenant's project is a 404 whatever the query.
func TestSessionSearchOverREST(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	b := e.newTenant(t, "bolt")
	ctx := context.Background()
	if _, err := a.member.c.CreateSession(ctx, a.project.ID, api.CreateSession{Title: "Fix the parser"}); err != nil {
		t.Fatal(err)
	}
	list := func(key, project, q string) (int, []string, string) {
		req, _ := http.NewRequest("GET", e.url+"/v1/projects/"+project+"/sessions?q="+url.QueryEscape(q), nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Sessions []struct{ Title string } `json:"sessions"`
			Error    struct{ Message string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		var titles []string
		for _, s := range body.Sessions {
			titles = append(titles, s.Title)
		}
		return resp.StatusCode, titles, body.Error.Message
	}
	if status, titles, _ := list(a.member.key, a.project.ID, "PARSER"); status != http.StatusOK || len(titles) != 1 || titles[0] != "Fix the parser" {
		t.Errorf("q=PARSER = %d %v, want the one session", status, titles)
	}
	if status, titles, _ := list(a.member.key, a.project.ID, "nothing"); status != http.StatusOK || len(titles) != 0 {
		t.Errorf("q=nothing = %d %v, want none", status, titles)
	}
	if status, _, msg := list(a.member.key, a.project.ID, strings.Repeat("a", 201)); status != http.StatusBadRequest || !strings.Contains(msg, "q:") {
		t.Errorf("a 201-byte q = %d %q, want 400 naming q", status, msg)
	}
	if status, _, _ := list(b.member.key, a.project.ID, "parser"); status != http.StatusNotFound {
		t.Errorf("another tenant searching the project = %d, want 404", status)
	}
}
