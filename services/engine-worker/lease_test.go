package worker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
)

// TestRenewSettlesARevisionMismatch: a renewal whose revision is stale keeps
// the lease while the key still names this worker (our own renewal whose
// reply came too late), leaves alone a run that has just released its lease,
// and fences the run when another worker holds it or the key is gone.
func TestRenewSettlesARevisionMismatch(t *testing.T) {
	ctx := context.Background()
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	if err := DeclareBuckets(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{ID: "w1", Capacity: 1, Workspaces: t.TempDir(), Tokens: testKeys.Only(TokenKeys)}, Deps{NATS: nc, Logger: logging.Discard(), Health: health.New()})
	if err != nil {
		t.Fatal(err)
	}
	if w.owners, err = js.KeyValue(ctx, events.BucketRunOwner); err != nil {
		t.Fatal(err)
	}
	owner := func(worker string) []byte {
		b, _ := json.Marshal(events.RunOwner{Worker: worker, Tenant: "t1", ClaimedAt: time.Now().UTC()})
		return b
	}
	claim := func(id string) *run {
		rev, err := w.owners.Create(ctx, id, owner("w1"))
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancelCause(ctx)
		r := &run{job: events.Job{RunID: id, Tenant: "t1"}, epoch: rev, ctx: runCtx, cancel: cancel}
		r.rev.Store(rev)
		r.renewedAt.Store(time.Now().UnixNano())
		return r
	}

	// Our own renewal landed but its reply was lost: the revision moved on.
	late := claim("late")
	if _, err := w.owners.Update(ctx, "late", owner("w1"), late.rev.Load()); err != nil {
		t.Fatal(err)
	}
	w.renew(ctx, late)
	if late.fenced.Load() || late.ctx.Err() != nil {
		t.Fatal("a lease that still names this worker was given up")
	}
	if e, _ := w.owners.Get(ctx, "late"); e == nil || e.Revision() != late.rev.Load() {
		t.Errorf("the run's revision was not brought up to the key's")
	}

	// Another worker holds it.
	taken := claim("taken")
	if _, err := w.owners.Update(ctx, "taken", owner("w2"), taken.rev.Load()); err != nil {
		t.Fatal(err)
	}
	w.renew(ctx, taken)
	if !taken.fenced.Load() || context.Cause(taken.ctx) != errLeaseLost {
		t.Error("a lease held by another worker was not given up")
	}

	// The run ended and released its lease while a renewal was due: the
	// deleted key is not a lost lease.
	ended := claim("ended")
	ended.released.Store(true)
	if err := w.owners.Delete(ctx, "ended"); err != nil {
		t.Fatal(err)
	}
	w.renew(ctx, ended)
	if ended.fenced.Load() || ended.ctx.Err() != nil {
		t.Error("a run that released its lease was fenced by a late renewal")
	}

	// The key is gone (deleted, or aged out).
	gone := claim("gone")
	if err := w.owners.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	w.renew(ctx, gone)
	if !gone.fenced.Load() {
		t.Error("a lease whose key is gone was not given up")
	}
}
