package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
	"clopen.dev/services/streammgr"
)

// Scenarios whose engine output Postgres refuses: a NUL character, which an
// engine emits when a tool prints a binary file, cannot be stored in jsonb
// or text.
var poisonScenarios = map[string]string{
	// One poisoned event: a notification nothing else depends on.
	"poison-note": `{"name": "poison-note", "description": "a notification with a NUL in it", "steps": [
		{"text": {"text": "Reading the file. ", "chunk": 6}},
		{"notification": {"level": "warning", "title": "binary output", "message": "PK\u0003\u0004\u0000\u0000 (a zip file)"}},
		{"text": {"text": "It is a zip archive.", "chunk": 6}}]}`,
	// Poison that spreads: the streamed text, the saved answer and the
	// result that backfills the answer's stop reason all carry the NUL.
	"poison-text": `{"name": "poison-text", "description": "an answer with a NUL in it", "steps": [
		{"text": {"text": "The file starts with \u0000\u0000 and then", "chunk": 5}}]}`,
}

// TestPoisonedEventsAreSetAsideOthersFlow streams sessions of two tenants
// while the engine of two others emits events Postgres refuses (a NUL
// character). The other sessions' runs complete with every event stored
// exactly once; each refused event is recorded in streammgr.dead_events
// with the reason and is in the log or there, never both; the poisoned runs
// still end; streammgr stays ready.
func TestPoisonedEventsAreSetAsideOthersFlow(t *testing.T) {
	dir := t.TempDir()
	for name, sc := range poisonScenarios {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(sc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wc := worker.DefaultConfig()
	wc.ScenarioDir, wc.Workspaces = dir, t.TempDir()
	h := start(t, Config{Worker: wc, Gateway: unthrottled()})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	accounts := []account{h.account("poison-a"), h.account("poison-b")}
	type turn struct {
		acc            account
		session, run   string
		tenant, poison string
	}
	var turns []turn
	models := []string{"scripted/poison-note", "scripted/poison-text"}
	for range 8 {
		models = append(models, "scripted/slow?delay=2ms")
	}
	for i, model := range models {
		acc := accounts[i%2]
		s, err := acc.c.CreateSession(ctx, acc.project.ID, api.CreateSession{Model: model})
		if err != nil {
			t.Fatal(err)
		}
		r, err := acc.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "what is in this file?"})
		if err != nil {
			t.Fatal(err)
		}
		tenant, err := h.tenantOf(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		poison, _ := strings.CutPrefix(model, "scripted/poison-")
		if poison == model {
			poison = ""
		}
		turns = append(turns, turn{acc: acc, session: s.ID, run: r.RunID, tenant: tenant, poison: poison})
	}
	for _, tr := range turns {
		waitRunEnded(ctx, t, tr.acc.c, tr.run, events.RunCompleted)
		if tr.poison != "" {
			continue
		}
		if err := h.storedExactlyOnce(ctx, tr.acc.c, tr.tenant, tr.run); err != nil {
			t.Error(err)
		}
	}
	for _, tr := range turns[:2] {
		dead := h.storedOrDead(ctx, tr.acc.c, tr.tenant, tr.run)
		t.Logf("poison-%s: set aside %v", tr.poison, dead)
		switch tr.poison {
		case "note":
			if len(dead) != 1 || dead[0] != events.TypeNotification {
				t.Errorf("poison-note: set aside %v, want the one notification", dead)
			}
		case "text":
			if len(dead) == 0 {
				t.Error("poison-text: nothing set aside")
			}
		}
	}
	var reason string
	if err := h.st.DB.QueryRow(ctx, `SELECT error FROM streammgr.dead_events WHERE run_id = $1`, turns[0].run).Scan(&reason); err != nil ||
		!strings.Contains(reason, "22P05") {
		t.Errorf("the dead event's reason = %q (%v), want Postgres' refusal of \\u0000 (SQLSTATE 22P05)", reason, err)
	}
	if ok, results := h.st.Health.Run(ctx); !ok {
		t.Errorf("not ready after the poison: %+v", results)
	}
}

// storedOrDead checks that every event a run's worker published is either
// in the run's log or set aside in dead_events, never both and never
// twice, and returns the types of those set aside.
func (h *harness) storedOrDead(ctx context.Context, c *client.Client, tenant, run string) []string {
	h.t.Helper()
	stored, err := c.RunEvents(ctx, run, 0, 0, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	rows, err := h.st.DB.Query(ctx, `SELECT epoch, seq, type FROM streammgr.dead_events WHERE run_id = $1 ORDER BY epoch, seq`, run)
	if err != nil {
		h.t.Fatal(err)
	}
	type key struct{ epoch, seq uint64 }
	where := map[key]string{}
	var deadTypes []string
	var k key
	var typ string
	if _, err := pgx.ForEachRow(rows, []any{&k.epoch, &k.seq, &typ}, func() error {
		where[k] += "dead "
		deadTypes = append(deadTypes, typ)
		return nil
	}); err != nil {
		h.t.Fatal(err)
	}
	for _, ev := range stored {
		where[key{ev.Epoch, ev.Seq}] += "stored "
	}
	published := h.runEventsOnBus(tenant, run)
	for _, env := range published {
		if got := where[key{env.Epoch, env.Seq}]; got != "stored " && got != "dead " {
			h.t.Errorf("run %s: published event %d/%d %s is %q, want stored or dead, once", run, env.Epoch, env.Seq,
				env.Output.OutputType(), got)
		}
		delete(where, key{env.Epoch, env.Seq})
	}
	delete(where, key{0, 1}) // the user message streammgr recorded
	if len(where) > 0 {
		h.t.Errorf("run %s: kept events nobody published: %v", run, where)
	}
	return deadTypes
}

// TestReadinessTellsTheTruth: /readyz fails, naming the reason, while a
// writer cannot commit (its session row is locked by someone else) and
// while the events consumer is gone, and recovers once the cause is gone;
// the runs then complete.
func TestReadinessTellsTheTruth(t *testing.T) {
	cfg := streammgr.DefaultConfig()
	cfg.StallAfter = 2 * time.Second
	h := start(t, Config{Streammgr: cfg})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	acc := h.account("ready")
	send := func() string {
		s, err := acc.c.CreateSession(ctx, acc.project.ID, api.CreateSession{Model: "scripted/slow?delay=5ms"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := acc.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		waitStreaming(ctx, t, acc.c, r.RunID)
		return r.RunID
	}
	waitReadiness := func(wantOK bool, wantReason string) {
		t.Helper()
		var results any
		for {
			ok, res := h.st.Health.Run(ctx)
			results = res
			if ok == wantOK && (wantOK || strings.Contains(fmt.Sprint(res), wantReason)) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("readiness never became ok=%v with %q: %+v", wantOK, wantReason, results)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}

	run := send()
	tx, err := h.st.DB.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM streammgr.chat_sessions s JOIN streammgr.runs r ON r.session_id = s.id
		WHERE r.id = $1 FOR UPDATE OF s`, run); err != nil {
		t.Fatal(err)
	}
	waitReadiness(false, "not committed yet")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	waitReadiness(true, "")
	waitRunEnded(ctx, t, acc.c, run, events.RunCompleted)

	if err := h.js.DeleteConsumer(ctx, events.StreamEvents, "streammgr"); err != nil {
		t.Fatal(err)
	}
	waitReadiness(false, "consum")
	waitReadiness(true, "")
	run = send()
	waitRunEnded(ctx, t, acc.c, run, events.RunCompleted)
	if _, err := h.js.Consumer(ctx, events.StreamEvents, "streammgr"); err != nil {
		t.Errorf("the events consumer was not created again: %v", err)
	}
}
