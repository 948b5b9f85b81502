package enginetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// HostileTenant is one tenant's agent in a hostile suite.
type HostileTenant struct {
	Name, Workspace, Model string
	Engine                 engine.Engine
}

// Sh makes the tenant's agent run command through its shell tool
// (fakellm's @@SH@@) and returns everything the turn produced, as JSON.
func (tn HostileTenant) Sh(t *testing.T, command string) string {
	t.Helper()
	out, err := tn.Try(command)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Try is Sh for any goroutine: it returns what failed.
func (tn HostileTenant) Try(command string) (string, error) {
	rec := NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	err := tn.Engine.Run(ctx, engine.Request{Tenant: tn.Name, RunID: uuid.NewString(), SessionID: uuid.NewString(),
		Workspace: tn.Workspace, Model: tn.Model, Interaction: rec,
		Prompt: []events.Block{events.TextBlock{Text: "@@SH:" + base64.RawURLEncoding.EncodeToString([]byte(command)) + "@@"}}}, rec.Emit)
	if err != nil {
		return "", fmt.Errorf("%s: turn running %q: %w", tn.Name, command, err)
	}
	b, _ := json.Marshal(rec.Outputs())
	out := string(b)
	if !strings.Contains(out, "Tool finished") {
		return "", fmt.Errorf("%s: the command %q never ran: %s", tn.Name, command, out)
	}
	return out, nil
}

// HostileAttacks makes b's agent attack a's and the worker w after a has
// run a turn (so a's warm process holds mark, a string only a's
// environment has, and a's engine state a transcript): reading a's
// workspace and engine state, the worker's master key, a's environment
// through /proc; connecting to NATS, Postgres and another host; killing
// a's processes and writing into a's workspace. Proxied, b must not find
// its own key either, and the model server must get both tenants' real
// keys and no placeholder; with a memory limit a fork bomb and a memory
// hog must end only b's run. Every attack must fail. a and b are run by
// engines on w (StateDir, Sandbox, BaseURL), their credentials holding
// HostileKey of their tenant.
func HostileAttacks(t *testing.T, w *HostileWorker, a, b HostileTenant, mark string) {
	t.Helper()
	a.Sh(t, "echo hello from a")
	must(t, os.WriteFile(filepath.Join(w.home(a.Name), "transcript-of-a.jsonl"), []byte("TRANSCRIPT_OF_A"), 0o644))
	type attack struct{ name, command, leak string }
	attacks := []attack{
		{"read the other tenant's workspace", "cat " + filepath.Join(a.Workspace, ".env"), "SECRET_OF_" + a.Name},
		{"read the other tenant's engine state", "cat " + filepath.Join(w.home(a.Name), "transcript-of-a.jsonl"), "TRANSCRIPT_OF_A"},
		{"read the worker's master key", "cat " + filepath.Join(w.Root, "data", "secret.key"), hostileMasterKey},
		{"read another process's environment", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -o '" + unmatched(mark) + "' | head -1", mark},
	}
	if key := HostileKey(a.Name); key != mark {
		// Proxied, a's key is not in its environment either.
		attacks = append(attacks, attack{"read another process's provider key",
			"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -o '" + unmatched(key) + "' | head -1", key})
	}
	if w.cfg.Proxied {
		// The agent's own environment and state hold no key of its
		// tenant's: the run's model proxy holds it.
		key := HostileKey(b.Name)
		attacks = append(attacks, attack{"read its own provider key",
			"env | grep -a -o '" + unmatched(key) + "' | head -1; grep -rao '" + unmatched(key) + "' $HOME 2>/dev/null | head -1", key})
	}
	// Killing comes last: unconfined, it ends a's processes.
	attacks = append(attacks,
		attack{"connect to NATS", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && echo OPEN$((4000+222))'", "OPEN4222"},
		attack{"connect to Postgres", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432 && echo OPEN$((5000+432))'", "OPEN5432"},
		attack{"connect to another host", "timeout 3 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80 && echo OPEN$((40+40))'", "OPEN80"},
		attack{"kill the other tenant's processes", "for p in /proc/[0-9]*; do grep -qa '" + unmatched(mark) + "' $p/environ 2>/dev/null && kill -9 ${p#/proc/} && echo KILL$((1+1))ED; done; true", "KILL2ED"})
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			if out := b.Sh(t, at.command); strings.Contains(out, at.leak) {
				t.Errorf("attack succeeded: %q gave %q", at.command, at.leak)
			}
		})
	}
	t.Run("write into the other tenant's workspace", func(t *testing.T) {
		b.Sh(t, "echo pwned > "+filepath.Join(a.Workspace, "pwned.txt")+"; true")
		if _, err := os.Stat(filepath.Join(a.Workspace, "pwned.txt")); err == nil {
			t.Error("attack succeeded: B wrote into A's workspace")
		}
	})
	if w.Sandbox == nil {
		return // a fork bomb and a memory hog unconfined would take the host down
	}
	if w.cfg.Proxied {
		t.Run("turns reach the model with the real key, through the proxy", func(t *testing.T) {
			for _, k := range []string{HostileKey(a.Name), HostileKey(b.Name)} {
				if _, ok := w.keys.Load(k); !ok {
					t.Errorf("the model server never got %s", k)
				}
			}
			w.keys.Range(func(k, _ any) bool {
				if strings.HasPrefix(k.(string), modelproxy.TokenPrefix) {
					t.Errorf("a placeholder reached the model server: %s", k)
				}
				return true
			})
		})
	}
	if w.cfg.Limits.MemoryBytes > 0 {
		t.Run("fork bomb and memory hog end only the attacker's run", func(t *testing.T) { forkBombAndHog(t, a, b) })
	}
}

// unmatched is a grep pattern for s that does not match itself: a command
// line holding it (in /proc) is no leak.
func unmatched(s string) string { return s[:len(s)-1] + "[" + s[len(s)-1:] + "]" }

// forkBombAndHog makes b fork 5000 processes and allocate 2 GB while a
// runs a turn, which must complete.
func forkBombAndHog(t *testing.T, a, b HostileTenant) {
	var wg sync.WaitGroup
	var aOut string
	var aErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(time.Second)
		aOut, aErr = a.Try("sleep 2; echo A-$((1))-RUNS")
	}()
	defer wg.Wait()
	bomb, bombErr := b.Try(`python3 -c '
import os, time
n = 0
for i in range(5000):
    try:
        if os.fork() == 0:
            time.sleep(20); os._exit(0)
        n += 1
    except OSError:
        pass
print("FORK" + "COUNT", n)
'`)
	hog, hogErr := b.Try(`python3 -c 'b = bytearray(2 << 30); print("ALLOC" + "ATED")' 2>&1 | tail -1`)
	wg.Wait()
	t.Logf("fork bomb: %v %s", bombErr, tail(bomb))
	t.Logf("memory hog: %v %s", hogErr, tail(hog))
	if aErr != nil {
		t.Fatalf("the other tenant's run failed: %v", aErr)
	}
	// The attacker's run may end (its agent cannot fork either) or report
	// how far the bomb got; it never forks all of it.
	if strings.Contains(bomb, "FORKCOUNT 5000") {
		t.Errorf("the fork bomb was not contained: %s", bomb)
	}
	if strings.Contains(hog, "ALLOCATED") {
		t.Errorf("the 2 GB allocation succeeded: %s", hog)
	}
	if !strings.Contains(aOut, "A-1-RUNS") {
		t.Errorf("the other tenant's run did not complete: %s", aOut)
	}
}

func tail(s string) string {
	if len(s) > 600 {
		return s[len(s)-600:]
	}
	return s
}
