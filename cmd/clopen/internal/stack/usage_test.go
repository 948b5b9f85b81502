package stack

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// GET /v1/usage sums the recorded runs of the caller's tenant (an admin)
// or the caller's own (a member) over a time range, per group, and never
// another tenant's. The scripted "tools" scenario reports 1200 input, 85
// output and 900 cache-read tokens and $0.0042 per run.
func TestUsageSumsRecordedRuns(t *testing.T) {
	h := start(t, Config{})
	ctx := context.Background()
	a, b := h.account("usage-a"), h.account("usage-b")
	if _, err := gateway.CreateUser(ctx, h.st.DB, "usage-a", api.CreateUser{Email: "member@usage-a", Name: "Member", Role: api.RoleMember}); err != nil {
		t.Fatal(err)
	}
	mkey, err := gateway.CreateKey(ctx, h.st.DB, "usage-a", "member@usage-a", "test")
	if err != nil {
		t.Fatal(err)
	}
	member := client.New(h.st.URL, mkey.Key)
	me, err := member.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.AddMember(ctx, a.project.ID, api.AddMember{UserID: me.User.ID}); err != nil {
		t.Fatal(err)
	}
	began := time.Now().UTC().Add(-time.Second)
	for _, turn := range []struct {
		c        *client.Client
		project  string
		scenario string
	}{{a.c, a.project.ID, "tools"}, {a.c, a.project.ID, "tools"}, {a.c, a.project.ID, "error"},
		{member, a.project.ID, "tools"}, {b.c, b.project.ID, "tools"}} {
		runTurn(t, turn.c, turn.project, turn.scenario)
	}

	byModel := url.Values{"groupBy": {"model"}, "from": {began.Format(time.RFC3339Nano)}}
	got, err := a.c.Usage(ctx, byModel)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]events.UsageRow{}
	for _, r := range got.Rows {
		rows[r.Model] = r
	}
	tools, failed := rows["scripted/tools"], rows["scripted/error"]
	if len(got.Rows) != 2 || tools.Runs != 3 || tools.InputTokens != 3600 || tools.OutputTokens != 255 || tools.CacheReadInputTokens != 2700 ||
		math.Abs(tools.CostUSD-0.0126) > 1e-9 || tools.RunSeconds <= 0 || tools.Engine != "" {
		t.Errorf("admin's usage by model = %+v, want scripted/tools: 3 runs (the member's too, not the other tenant's), 3600/255/2700 tokens, $0.0126", got.Rows)
	}
	if failed.Runs != 1 || failed.FailedRuns != 1 || failed.InputTokens != 0 {
		t.Errorf("the failed run's row = %+v, want 1 run, failed", failed)
	}

	mine, err := member.Usage(ctx, url.Values{"from": {began.Format(time.RFC3339Nano)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(mine.Rows) != 1 || mine.Rows[0].Runs != 1 || mine.Rows[0].OutputTokens != 85 {
		t.Errorf("a member's usage = %+v, want only its own run", mine.Rows)
	}
	theirs, err := b.c.Usage(ctx, url.Values{"groupBy": {"project,user,engine"}, "from": {began.Format(time.RFC3339Nano)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs.Rows) != 1 || theirs.Rows[0].Runs != 1 || theirs.Rows[0].ProjectID != b.project.ID || theirs.Rows[0].Engine != "scripted" {
		t.Errorf("the other tenant's usage = %+v, want its one run in its project", theirs.Rows)
	}
	// The other tenant's project named as a filter finds nothing.
	cross, err := b.c.Usage(ctx, url.Values{"projectId": {a.project.ID}, "from": {began.Format(time.RFC3339Nano)}})
	if err != nil || len(cross.Rows) != 0 {
		t.Errorf("usage of another tenant's project = %+v, %v; want nothing", cross.Rows, err)
	}
	// A range that ends before the runs holds none of them.
	old, err := a.c.Usage(ctx, url.Values{"to": {began.Add(-time.Hour).Format(time.RFC3339)}})
	if err != nil || len(old.Rows) != 0 {
		t.Errorf("usage before the runs = %+v, %v; want nothing", old.Rows, err)
	}

	for _, bad := range []url.Values{
		{"groupBy": {"tenant"}}, {"groupBy": {"model,model"}}, {"from": {"yesterday"}},
		{"from": {"2026-01-02T00:00:00Z"}, "to": {"2026-01-01T00:00:00Z"}},
		{"from": {"2020-01-01T00:00:00Z"}, "to": {"2026-01-01T00:00:00Z"}}, {"projectId": {"not-an-id"}},
	} {
		_, err := a.c.Usage(ctx, bad)
		var apiErr *events.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
			t.Errorf("usage %v = %v, want 400", bad, err)
		}
	}
}

// runTurn runs one scripted turn in a new session of project and waits for
// its end.
func runTurn(t *testing.T, c *client.Client, project, scenario string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.CreateSession(ctx, project, api.CreateSession{Engine: events.EngineScripted, Model: "scripted/" + scenario})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.SendMessage(ctx, s.ID, api.SendMessage{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := c.Run(ctx, reply.RunID)
		if err == nil && r.State.Terminal() {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("run %s did not end", reply.RunID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
