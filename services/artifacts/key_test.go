package artifacts

import (
	"context"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/artifacts/internal/seal"
)

// The standalone service does not start without a master key, and a
// replica whose key differs from the one the stored credentials are sealed
// with refuses to start, naming both, instead of serving credentials it
// cannot open and sealing new ones the others cannot.
func TestReplicasMustShareTheMasterKey(t *testing.T) {
	db := pgtest.New(t, Schema)
	nc, _ := natstest.Connect(t, natstest.Start(t))
	deps := Deps{NATS: nc, DB: db, Logger: logging.Discard(), Health: health.New()}
	_, keyA, _ := seal.Generate()
	b, keyB, _ := seal.Generate()

	cfg := ConfigFromEnv(func(string) string { return "" })
	cfg.DataDir = t.TempDir()
	cfg.Tokens = testKeys.Only(TokenKeys)
	if err := Run(context.Background(), cfg, deps); err == nil || !strings.Contains(err.Error(), seal.EnvKey+" is not set") {
		t.Fatalf("Run without a key = %v, want a refusal naming %s", err, seal.EnvKey)
	}

	// Replica A seals a credential.
	cfg.MasterKey = keyA
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, deps) }()
	e := &env{t: t, nc: nc, db: db}
	c := newCaller()
	var prov events.Provider
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := e.call(events.OpProvidersPut, events.ProviderPut{Caller: c, Provider: events.Provider{Engine: events.EngineCodex, Slug: "openai", Name: "OpenAI"}}, &prov)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cred := "sk-a"
	e.must(events.OpAccountsPut, events.AccountPut{Caller: c, Account: events.Account{ProviderID: prov.ID, Name: "a"}, Credential: &cred}, nil)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Replica B, with another key, refuses.
	cfg.MasterKey = keyB
	err := Run(context.Background(), cfg, deps)
	if err == nil || !strings.Contains(err.Error(), b.Fingerprint()) || !strings.Contains(err.Error(), "1 with key") {
		t.Fatalf("Run with another key = %v, want a refusal naming this key %s and the stored one", err, b.Fingerprint())
	}
}
