package pi_test

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// models reads e's catalog with a deadline of d and reports how long it took.
func models(e *pi.Engine, configDir, provider string, d time.Duration) ([]events.EngineModel, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	began := time.Now()
	m, err := e.Models(ctx, engine.CatalogRequest{Tenant: "t", ConfigDir: configDir, Provider: provider})
	return m, time.Since(began), err
}

// TestCatalogOnTheCLI reads the catalog from the pinned pi: the models of
// the account's provider with pi's limits, prices and thinking levels, the
// default model first; a provider the account lacks has none; an account on
// a Chat Completions server lists the one model its models.json serves.
func TestCatalogOnTheCLI(t *testing.T) {
	sb := enginetest.NewSandbox(t, time.Second)
	e := newTestEngine(t, sb)
	got, took, err := models(e, t.TempDir(), "", 30*time.Second)
	if err != nil || len(got) == 0 || got[0].ID != pi.DefaultModel {
		t.Fatalf("Models = %d models (first %+v), %v; want pi's catalog, %s first", len(got), got, err, pi.DefaultModel)
	}
	t.Logf("catalog of %d models read in %v", len(got), took.Round(time.Millisecond))
	s45, ok := engine.FindModel(got, "claude-sonnet-4-5")
	if rc := s45.Capabilities.ReasoningControl; !ok || s45.Provider != "anthropic" || s45.Limit != (events.ModelLimit{Input: 200_000, Output: 64_000}) ||
		s45.Cost == nil || s45.Cost.Input != 3 || rc == nil || rc.Default != "medium" || rc.Has("xhigh") || !rc.Has("minimal") {
		t.Errorf("claude-sonnet-4-5 = %+v (control %+v), want pi's limits, price and levels off…high", s45, rc)
	}
	if o46, _ := engine.FindModel(got, "claude-opus-4-6"); o46.Capabilities.ReasoningControl == nil || !o46.Capabilities.ReasoningControl.Has("xhigh") {
		t.Errorf("claude-opus-4-6 = %+v, want xhigh among its levels", o46)
	}
	if none, _, err := models(e, t.TempDir(), "openai", 30*time.Second); err != nil || none == nil || len(none) != 0 {
		t.Errorf("Models(openai) = %v, %v; want an empty list", none, err)
	}

	chat := pi.New(pi.Config{Process: engine.Process{Bin: enginetest.InstalledBin(t, events.EnginePi), StateDir: t.TempDir(), Wrap: sb.Wrap}, Credentials: pi.EnvCredentials{BaseURL: sb.BaseURL, Getenv: func(k string) string {
		return map[string]string{"CLOPEN_PI_API": pi.APIOpenAICompletions}[k]
	}}}, engine.Key{Engine: events.EnginePi})
	t.Cleanup(func() { _ = chat.Dispose(context.Background()) })
	got, _, err = models(chat, t.TempDir(), "", 30*time.Second)
	if err != nil || len(got) != 1 || got[0].ID != pi.DefaultModel || got[0].Provider != "clopen" || got[0].Cost != nil {
		t.Errorf("Models on a Chat Completions account = %+v, %v; want the one model it serves, unpriced", got, err)
	}
}

// TestCatalogFailures: a catalog pi cannot give is an empty list and an
// error, whatever the reason — the worker answers [] with it and caches
// nothing. Each case runs the real pi.
func TestCatalogFailures(t *testing.T) {
	sb := enginetest.NewSandbox(t, time.Second)
	bin := enginetest.InstalledBin(t, events.EnginePi)
	newEngine := func(bin string, wrap []string) *pi.Engine {
		e := pi.New(pi.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: wrap, KillGrace: time.Second}, Credentials: pi.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EnginePi})
		t.Cleanup(func() { _ = e.Dispose(context.Background()) })
		return e
	}
	// A config dir with an extension that throws: pi exits at start.
	broken := t.TempDir()
	if err := os.MkdirAll(filepath.Join(broken, "extensions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "extensions", "broken.ts"), []byte(`throw new Error("broken extension")`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		e         *pi.Engine
		configDir string
		deadline  time.Duration
		kind      events.ErrorKind
		says      string
	}{
		{"broken config dir", newEngine(bin, sb.Wrap), broken, 30 * time.Second, events.KindCrashed, "broken extension"},
		// pi is killed while it starts, before it can answer.
		{"killed", newEngine(bin, append(append([]string{}, sb.Wrap...), "timeout", "-s", "KILL", "0.3")), "", 30 * time.Second,
			events.KindCrashed, "pi exited"},
		{"no answer in time", newEngine(bin, sb.Wrap), "", 300 * time.Millisecond, events.KindTimeout, "deadline"},
		{"not installed", newEngine(filepath.Join(t.TempDir(), "pi"), nil), "", 30 * time.Second, events.KindNotInstalled, "start pi"},
	}
	for _, tt := range tests {
		got, took, err := models(tt.e, cmp.Or(tt.configDir, t.TempDir()), "", tt.deadline)
		t.Logf("%s: %v after %v", tt.name, err, took.Round(time.Millisecond))
		if got == nil || len(got) != 0 || engine.KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: Models = %v, %v (kind %s); want an empty list and a %s error saying %q", tt.name, got, err,
				engine.KindOf(err), tt.kind, tt.says)
		}
		if took > tt.deadline+3*time.Second {
			t.Errorf("%s: Models took %v", tt.name, took)
		}
	}
}
