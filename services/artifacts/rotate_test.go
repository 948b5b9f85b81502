package artifacts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

// saver keeps saving credentials through the running service, new accounts
// and new values for one account, and remembers the last value of each.
type saver struct {
	e    *env
	c    events.Caller
	prov string
	mu   sync.Mutex
	want map[string]string // account -> credential
	errs []error
}

func newSaver(e *env, engine events.EngineType) *saver {
	s := &saver{e: e, c: newCaller(), want: map[string]string{}}
	var prov events.Provider
	e.must(events.OpProvidersPut, events.ProviderPut{Caller: s.c, Provider: events.Provider{Engine: engine, Slug: "p", Name: "P"}}, &prov)
	s.prov = prov.ID
	return s
}

// save stores credential i: a new account, or a new value of the first.
func (s *saver) save(i int) {
	cred := fmt.Sprintf("sk-%d", i)
	acc := events.Account{ProviderID: s.prov, Name: fmt.Sprintf("a%d", i)}
	s.mu.Lock()
	for id := range s.want {
		if i%2 == 0 {
			acc.ID = id
		}
		break
	}
	s.mu.Unlock()
	var got events.Account
	if err := s.e.call(events.OpAccountsPut, events.AccountPut{Caller: s.c, Account: acc, Credential: &cred}, &got); err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, fmt.Errorf("save %d: %w", i, err))
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	s.want[got.ID] = cred
	s.mu.Unlock()
}

// during saves credentials until fn returns, and a few after.
func (s *saver) during(fn func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s.save(i)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	fn()
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	s.save(1_000_000)
}

// check resolves every saved credential through the running service, and
// with a store that holds only key.
func (s *saver) check(t *testing.T, engine events.EngineType, key *seal.Key) {
	t.Helper()
	for _, err := range s.errs {
		t.Error(err)
	}
	only := &store.Store{DB: s.e.db, Keys: seal.Ring(key)}
	for id, cred := range s.want {
		var got events.ResolvedAccount
		if err := s.e.call(events.OpAccountsResolve, events.AccountResolve{Caller: s.c, Engine: engine, AccountID: id}, &got); err != nil || got.Credential != cred {
			t.Errorf("the running service resolves account %s = %q, %v; want %q", id, got.Credential, err, cred)
		}
		if got, err := only.ResolveAccount(context.Background(), s.c.TenantID, engine, id); err != nil || got.Credential != cred {
			t.Errorf("with only the new key, account %s = %q, %v; want %q", id, got.Credential, err, cred)
		}
	}
	others, err := only.SealedWithOtherKeys(context.Background(), key.Fingerprint())
	if err != nil || len(others) > 0 {
		t.Errorf("credentials sealed with keys other than the new %s: %v, %v", key.Fingerprint(), others, err)
	}
	t.Logf("%d credentials saved, all readable with the new key", len(s.want))
}

// A rotation of the data dir's key file while the service runs and saves
// credentials: the service goes on resolving every credential and seals
// the ones saved meanwhile with the new key, without a restart.
func TestRotateKeyFileWhileServing(t *testing.T) {
	e := start(t)
	s := newSaver(e, events.EngineCodex)
	for i := range 5 {
		s.save(-i - 1)
	}
	var got Rotated
	s.during(func() {
		var err error
		if got, err = RotateKey(context.Background(), e.db, Config{DataDir: e.dataDir}, ""); err != nil {
			t.Fatalf("RotateKey: %v", err)
		}
	})
	t.Logf("re-sealed %d, %s -> %s", got.Resealed, got.OldFingerprint, got.NewFingerprint)
	key, err := seal.Load("", e.dataDir)
	if err != nil || key.Fingerprint() != got.NewFingerprint {
		t.Fatalf("key file after the rotation = %v, %v; want %s", key, err, got.NewFingerprint)
	}
	s.check(t, events.EngineCodex, key)
}

// A mounted key file (CLOPEN_MASTER_KEY_FILE), as a secret store updates
// it: the operator adds the new key, rotates, then drops the old one; the
// replica never restarts. With only the current key in the file, rotate-key
// changes nothing and hands back a key to add first.
func TestRotateMountedKeyWithoutRestart(t *testing.T) {
	oldKey, oldText, _ := seal.Generate()
	newKey, newText, _ := seal.Generate()
	file := filepath.Join(t.TempDir(), "master.key")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file+".tmp", []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil { // as a secret mount swaps it
			t.Fatal(err)
		}
	}
	write(oldText + "\n")
	e := startWith(t, func(c *Config) { c.MasterKeyFile = file })
	cfg := Config{DataDir: e.dataDir, MasterKeyFile: file}
	s := newSaver(e, events.EnginePi)
	for i := range 5 {
		s.save(-i - 1)
	}

	got, err := RotateKey(context.Background(), e.db, cfg, "")
	if err != nil || got.NewKey == "" || got.Resealed != 0 || got.NewFingerprint != "" {
		t.Fatalf("RotateKey with one key = %+v, %v; want nothing changed and a key to add", got, err)
	}
	if fp, _ := store.MasterKey(context.Background(), e.db); fp != oldKey.Fingerprint() {
		t.Fatalf("sealing key after a refused rotation = %s, want %s", fp, oldKey.Fingerprint())
	}

	write(oldText + "\n" + newText + "\n")
	s.during(func() {
		if got, err = RotateKey(context.Background(), e.db, cfg, ""); err != nil || got.NewFingerprint != newKey.Fingerprint() {
			t.Fatalf("RotateKey = %+v, %v; want the file's other key %s", got, err, newKey.Fingerprint())
		}
	})
	write(newText + "\n")
	s.save(2_000_000)
	s.check(t, events.EnginePi, newKey)
}
