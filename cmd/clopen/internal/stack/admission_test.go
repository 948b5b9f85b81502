package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/streammgr"
)

// TestOneTenantCannotHoldTheFleet: tenant A floods a worker of six slots
// with ten long turns on ten sessions; tenant B's one turn is claimed at once
// rather than behind A's turns, and A never holds more runs than its limit
// (the default, four).
func TestOneTenantCannotHoldTheFleet(t *testing.T) {
	wc := worker.DefaultConfig()
	wc.Capacity, wc.Workspaces = 6, t.TempDir()
	h := start(t, Config{Gateway: unthrottled(), Worker: wc})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := h.account("flood-a"), h.account("flood-b")
	var flood []string
	for i := range 10 {
		s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Model: "scripted/slow?delay=150ms"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: fmt.Sprint("flood ", i)})
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, r.RunID)
	}
	claimed := func() int {
		n := 0
		for _, id := range flood {
			if r, err := a.c.Run(ctx, id); err == nil && r.ClaimedAt != nil && !r.State.Terminal() {
				n++
			}
		}
		return n
	}
	for claimed() < 4 {
		if ctx.Err() != nil {
			t.Fatal("tenant A's turns were never claimed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the worker takes whatever more of A's it is given
	if n := claimed(); n > 4 {
		t.Errorf("tenant A holds %d of the worker's 6 slots, want at most its limit of 4", n)
	}

	s, err := b.c.CreateSession(ctx, b.project.ID, api.CreateSession{Model: "scripted/hello"})
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	r, err := b.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "my turn"})
	if err != nil {
		t.Fatal(err)
	}
	wait, cancelWait := context.WithTimeout(ctx, 15*time.Second)
	defer cancelWait()
	run, err := pollRun(wait, b.c, r.RunID, func(r events.Run) (bool, error) { return r.ClaimedAt != nil, nil })
	if err != nil {
		t.Fatalf("tenant B's turn was not claimed within 15 s while tenant A floods: %v", err)
	}
	t.Logf("tenant B's turn claimed %v after its send (queued→claimed %v)", time.Since(sent).Round(time.Millisecond),
		run.ClaimedAt.Sub(run.QueuedAt).Round(time.Millisecond))
}

// TestAFullTenantQueueIs429OverREST: a send that would wait while its
// tenant's queue is full answers 429 tenant_queue_full with a Retry-After,
// and the held turn's reply says why it waits.
func TestAFullTenantQueueIs429OverREST(t *testing.T) {
	h := start(t, Config{Gateway: unthrottled()})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := h.account("queue-full")
	me, err := a.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := streammgr.SetTenantLimits(ctx, h.st.DB, me.Tenant.ID,
		streammgr.TenantLimits{MaxConcurrent: ptr(1), MaxQueued: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	session := func() string {
		s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Model: "scripted/slow?delay=100ms"})
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	if _, err := a.c.SendMessage(ctx, session(), api.SendMessage{Text: "runs"}); err != nil {
		t.Fatal(err)
	}
	held, err := a.c.SendMessage(ctx, session(), api.SendMessage{Text: "held"})
	if err != nil || !held.Queued || held.QueuedReason != "tenant at its limit of 1 concurrent runs" {
		t.Fatalf("second send = %+v %v, want queued with the tenant's limit as the reason", held, err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.st.URL+"/v1/sessions/"+session()+"/messages",
		strings.NewReader(`{"text":"one too many"}`))
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body api.Error
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusTooManyRequests || body.Error.Code != "tenant_queue_full" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("send over the queue = %d %+v Retry-After %q, want 429 tenant_queue_full with a Retry-After",
			resp.StatusCode, body.Error, resp.Header.Get("Retry-After"))
	}
}

func ptr(n int) *int { return &n }
