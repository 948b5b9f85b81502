package audit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/pgtest"
)

var testLog = Log{Service: "test", Table: "audit_test.audit_log"}

// newDB is a fresh database holding the audit table of testdata/audit_log.sql.
func newDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	db := pgtest.New(t)
	ddl, err := os.ReadFile("testdata/audit_log.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(context.Background(), "CREATE SCHEMA audit_test;\n"+string(ddl)); err != nil {
		t.Fatal(err)
	}
	return db
}

func record(t *testing.T, db *pgxpool.Pool, e Entry) {
	t.Helper()
	err := pgx.BeginFunc(context.Background(), db, func(tx pgx.Tx) error { return testLog.Record(context.Background(), tx, e) })
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecordRollsBackWithItsChange: an entry is written by the change's
// own transaction, so a change that fails leaves no entry.
func TestRecordRollsBackWithItsChange(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	tenant := uuid.NewString()
	failed := errors.New("the change failed")
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := testLog.Record(ctx, tx, Entry{Tenant: tenant, Actor: Operator, Action: "thing.create",
			Target: events.AuditTarget{Type: "thing", ID: "1"}}); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatal(err)
	}
	got, err := testLog.List(ctx, db, tenant, events.AuditQuery{})
	if err != nil || len(got) != 0 {
		t.Fatalf("after a failed change: %d entries, %v; want none", len(got), err)
	}
}

// TestListFiltersPagesAndKeepsTenants: entries come newest first, filtered
// by time, actor, action (exact or prefix) and target, in pages that
// neither skip nor repeat, and never another tenant's.
func TestListFiltersPagesAndKeepsTenants(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	a, b := uuid.NewString(), uuid.NewString()
	ada := events.AuditActor{ID: uuid.NewString(), Name: "ada"}
	for i := range 7 {
		action := "project.create"
		if i%2 == 1 {
			action = "project.delete"
		}
		record(t, db, Entry{Tenant: a, Actor: ada, Action: action, Target: events.AuditTarget{Type: "project", ID: string(rune('a' + i))},
			After: map[string]any{"n": i}})
	}
	record(t, db, Entry{Tenant: a, Actor: Operator, Action: "budget.set", Target: events.AuditTarget{Type: "budget", ID: "tokens/day"}})
	record(t, db, Entry{Tenant: b, Actor: Operator, Action: "project.create", Target: events.AuditTarget{Type: "project", ID: "z"}})

	all, err := testLog.List(ctx, db, a, events.AuditQuery{})
	if err != nil || len(all) != 8 {
		t.Fatalf("tenant a's entries: %d, %v; want 8", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].At.After(all[i-1].At) {
			t.Errorf("entry %d (%s) is newer than entry %d (%s)", i, all[i].At, i-1, all[i-1].At)
		}
	}
	if all[0].Action != "budget.set" || all[0].Service != "test" || all[0].Actor != Operator {
		t.Errorf("newest entry = %+v, want the operator's budget.set", all[0])
	}
	for _, e := range all {
		if e.Target.ID == "z" {
			t.Errorf("tenant a sees tenant b's entry %+v", e)
		}
	}
	var paged []events.AuditEntry
	q := events.AuditQuery{Limit: 3}
	for range 10 {
		page, err := testLog.List(ctx, db, a, q)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if len(page) < q.Limit {
			break
		}
		q.Before, q.BeforeID = page[len(page)-1].At, page[len(page)-1].ID
	}
	if len(paged) != len(all) {
		t.Fatalf("paging by 3 gave %d entries, want %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i].ID != all[i].ID {
			t.Fatalf("page entry %d = %s, want %s", i, paged[i].ID, all[i].ID)
		}
	}
	count := func(q events.AuditQuery) int {
		t.Helper()
		got, err := testLog.List(ctx, db, a, q)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	tests := []struct {
		name string
		q    events.AuditQuery
		want int
	}{
		{"exact action", events.AuditQuery{Action: "project.delete"}, 3},
		{"action prefix", events.AuditQuery{Action: "project.*"}, 7},
		{"actor", events.AuditQuery{ActorID: events.AuditOperator}, 1},
		{"target", events.AuditQuery{TargetType: "project", TargetID: "c"}, 1},
		{"from the newest on", events.AuditQuery{From: all[0].At}, 1},
		{"before the newest", events.AuditQuery{To: all[0].At}, 7},
		{"nothing in the future", events.AuditQuery{From: time.Now().Add(time.Hour)}, 0},
	}
	for _, tt := range tests {
		if got := count(tt.q); got != tt.want {
			t.Errorf("%s: %d entries, want %d", tt.name, got, tt.want)
		}
	}
}

// TestRecordRedactsSecrets: whatever a change hands the log, its secrets
// are not stored; the whole table is searched for them.
func TestRecordRedactsSecrets(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	tenant := uuid.NewString()
	secrets := []string{"sk-ant-api03-very-secret", "hunter2-password", "ghp_0123456789abcdefghij", "plain-token-value", "AKIAABCDEFGHIJKLMNOP"}
	record(t, db, Entry{Tenant: tenant, Actor: Operator, Action: "account.update", Target: events.AuditTarget{Type: "account", ID: "1"},
		Before: map[string]any{"name": "old", "credential": secrets[0], "hasCredential": true},
		After: map[string]any{"name": "new", "options": map[string]any{"headers": map[string]any{"X-Api-Key": secrets[0]},
			"password": secrets[1]}, "note": secrets[2], "accessToken": secrets[3], "awsKey": []any{secrets[4]},
			"inputTokens": 12, "doc": strings.Repeat("x", MaxString+1)}})
	var dump string
	if err := db.QueryRow(ctx, `SELECT string_agg(t::text, E'\n') FROM audit_test.audit_log t`).Scan(&dump); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(dump, s) {
			t.Errorf("the audit table holds the secret %q:\n%s", s, dump)
		}
	}
	got, err := testLog.List(ctx, db, tenant, events.AuditQuery{})
	if err != nil || len(got) != 1 {
		t.Fatal(len(got), err)
	}
	var before, after map[string]any
	_ = json.Unmarshal(got[0].Before, &before)
	_ = json.Unmarshal(got[0].After, &after)
	if before["name"] != "old" || before["hasCredential"] != true || before["credential"] != events.AuditRedacted {
		t.Errorf("before = %v, want the name and hasCredential kept and the credential redacted", before)
	}
	if after["inputTokens"] != float64(12) || !strings.HasPrefix(after["doc"].(string), "<4097 bytes, sha256 ") {
		t.Errorf("after = %v, want numbers kept and a long document digested", after)
	}
}

func TestCheckRefusesBadQueries(t *testing.T) {
	for _, q := range []events.AuditQuery{
		{Limit: MaxPage + 1}, {Limit: -1},
		{From: time.Now(), To: time.Now().Add(-time.Hour)},
		{Action: "Project.Create"}, {Action: "project"}, {Action: "project.*.x"}, {Action: "a.b'; DROP TABLE x"},
		{BeforeID: "not-a-uuid"},
	} {
		var apiErr *events.APIError
		if err := Check(q); !errors.As(err, &apiErr) || apiErr.Status != 400 {
			t.Errorf("Check(%+v) = %v, want a 400", q, err)
		}
	}
	for _, q := range []events.AuditQuery{{}, {Action: "project.*"}, {Action: "apikey.create"}, {Action: "project.source.*"}} {
		if err := Check(q); err != nil {
			t.Errorf("Check(%+v) = %v, want nil", q, err)
		}
	}
}
