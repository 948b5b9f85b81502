package artifacts

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

func TestSourceCredentials(t *testing.T) {
	e := start(t)
	a, b := newCaller(), newCaller()
	project := uuid.NewString()
	resolve := func(c events.Caller, project string) string {
		t.Helper()
		var got events.SourceCredential
		e.must(events.OpSourceCredentialResolve, events.ProjectRef{Caller: c, ProjectID: project}, &got)
		return got.Credential
	}
	if got := resolve(a, project); got != "" {
		t.Fatalf("before any put = %q, want none", got)
	}
	e.must(events.OpSourceCredentialPut, events.SourceCredentialPut{Caller: a, ProjectID: project, Credential: "x-token:first"}, nil)
	e.must(events.OpSourceCredentialPut, events.SourceCredentialPut{Caller: a, ProjectID: project, Credential: "x-token:second"}, nil)
	if got := resolve(a, project); got != "x-token:second" {
		t.Errorf("resolve = %q, want the second credential", got)
	}
	if got := resolve(b, project); got != "" {
		t.Errorf("another tenant resolves %q for the same project id", got)
	}
	ctx := context.Background()
	var stored string
	if err := e.db.QueryRow(ctx, `SELECT credential FROM artifacts.source_credentials WHERE project_id = $1`, project).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored == "x-token:second" || len(stored) < 4 || stored[:3] != "v1:" {
		t.Errorf("stored credential %q is not a seal envelope", stored)
	}
	if err := e.call(events.OpSourceCredentialPut, events.SourceCredentialPut{Caller: a, ProjectID: project}, nil); status(err) != 400 {
		t.Errorf("empty credential = %v, want 400", err)
	}

	e.must(events.OpSourceCredentialDelete, events.ProjectRef{Caller: a, ProjectID: project}, nil)
	if got := resolve(a, project); got != "" {
		t.Errorf("after delete = %q", got)
	}
	// Forgetting a project removes its credential too.
	e.must(events.OpSourceCredentialPut, events.SourceCredentialPut{Caller: a, ProjectID: project, Credential: "t"}, nil)
	e.must(events.OpProjectForget, events.ProjectRef{Caller: a, ProjectID: project}, nil)
	var left int
	_ = e.db.QueryRow(ctx, `SELECT count(*) FROM artifacts.source_credentials WHERE project_id = $1`, project).Scan(&left)
	if left != 0 {
		t.Errorf("%d credentials outlived their project", left)
	}

	e.must(events.OpSourceCredentialPut, events.SourceCredentialPut{Caller: a, ProjectID: project, Credential: "x-token:second"}, nil)
	// A key rotation re-seals it.
	next, _, _ := seal.Generate()
	if n, err := rotateTo(e, next); err != nil || n != 1 {
		t.Fatalf("RotateKey = %d, %v; want the one credential re-sealed", n, err)
	}
	st := &store.Store{DB: e.db, Keys: seal.Ring(next), Docs: &store.Docs{Root: e.dataDir}}
	if got, err := st.ResolveSourceCredential(ctx, a.TenantID, project); err != nil || got != "x-token:second" {
		t.Errorf("after rotation = %q, %v", got, err)
	}

}

// rotateTo re-seals every credential of e's database from the key the
// service generated to next, as `clopen admin rotate-key` does.
func rotateTo(e *env, next *seal.Key) (int, error) {
	old, err := seal.Load("", e.dataDir)
	if err != nil {
		return 0, err
	}
	var n int
	ctx := context.Background()
	err = pgx.BeginFunc(ctx, e.db, func(tx pgx.Tx) error {
		var err error
		n, err = store.RotateKey(ctx, tx, seal.Ring(old), next)
		return err
	})
	return n, err
}
