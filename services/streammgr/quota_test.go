package streammgr

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/logging"
)

// TestTenantWorkspaceQuota fills a tenant's quota with the snapshots its
// sessions' turns leave: the next send is refused with 507 and says how
// much is held, another tenant still sends, and deleting a session makes
// room again.
func TestTenantWorkspaceQuota(t *testing.T) {
	cfg := testConfig()
	cfg.TenantWorkspaceQuota = 1000
	s := startAdmission(t, cfg)
	a, b := newParty(), newParty()
	finish := func(p party, session string, bytes int64) {
		t.Helper()
		r := s.run(s.mustSend(p, session, "write files").RunID)
		bus := bus{js: s.js, log: logging.Discard()}
		if err := bus.inject(s.ctx, p.TenantID, session, r.ID, events.RunState{State: events.RunCompleted,
			Snapshot: &events.RunSnapshot{ID: strings.Repeat("a", 63) + session[:1], Files: 1, Bytes: bytes}}, "test:"+r.ID+":end"); err != nil {
			t.Fatal(err)
		}
		s.waitFor("the run ends", func() bool { return s.run(r.ID).State == events.RunCompleted })
	}
	first, second := s.session(a), s.session(a)
	finish(a, first, 600)
	finish(a, second, 300) // 900 of 1000: still room
	finish(a, second, 500) // only a session's newest snapshot counts: 600 + 500
	_, err := s.send(a, first, "one more")
	var apiErr *events.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusInsufficientStorage || apiErr.Code != "workspace_quota" ||
		!strings.Contains(apiErr.Message, "1.1 KiB") {
		t.Fatalf("a send over the quota = %v, want 507 workspace_quota saying 1.1 KiB is held", err)
	}
	s.mustSend(b, s.session(b), "another tenant is not affected")
	if err := s.try(events.OpSessionDelete, events.SessionRef{Caller: a.Caller, SessionID: second}, nil); err != nil {
		t.Fatal(err)
	}
	s.mustSend(a, first, "room again once a session is gone")
}
