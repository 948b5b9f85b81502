package httpapi

import (
	"net/http/httptest"
	"testing"
	"time"

	"clopen.dev/pkg/events"
)

// FuzzAuditQuery: whatever a client puts in the audit log's query string,
// reading it is a 400 or a query audit.Check accepts, never a panic, and a
// cursor the API made reads back to its entry.
func FuzzAuditQuery(f *testing.F) {
	e := events.AuditEntry{ID: "0b3c7a7e-6a1f-4e2b-9c1d-2f3e4a5b6c7d", At: time.Date(2026, 5, 4, 3, 2, 1, 123456000, time.UTC)}
	f.Add(cursorOf(e), "project.*", "2026-01-01T00:00:00Z", "50")
	f.Add("bm90IGEgY3Vyc29y", "Drop Table", "yesterday", "-1")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, cursor, action, from, limit string) {
		r := httptest.NewRequest("GET", "/v1/audit", nil)
		q := r.URL.Query()
		for k, v := range map[string]string{"cursor": cursor, "action": action, "from": from, "limit": limit} {
			if v != "" {
				q.Set(k, v)
			}
		}
		r.URL.RawQuery = q.Encode()
		got, err := auditQuery(r)
		if err != nil {
			return
		}
		if cursor != "" && (got.Before.IsZero() || len(got.BeforeID) != 36) {
			t.Errorf("cursor %q read as %v %q", cursor, got.Before, got.BeforeID)
		}
	})
}

func TestCursorRoundTrip(t *testing.T) {
	e := events.AuditEntry{ID: "0b3c7a7e-6a1f-4e2b-9c1d-2f3e4a5b6c7d", At: time.Date(2026, 5, 4, 3, 2, 1, 123456000, time.UTC)}
	at, id, err := parseCursor(cursorOf(e))
	if err != nil || !at.Equal(e.At) || id != e.ID {
		t.Errorf("parseCursor(cursorOf(e)) = %v %q %v, want %v %q", at, id, err, e.At, e.ID)
	}
}
