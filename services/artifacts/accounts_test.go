package artifacts

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

func TestAccountsOneActiveAndCredentialsWriteOnly(t *testing.T) {
	e := start(t)
	c := newCaller()
	var prov events.Provider
	e.must(events.OpProvidersPut, events.ProviderPut{Caller: c, Provider: events.Provider{Engine: events.EngineCodex, Slug: "openai", Name: "OpenAI",
		APIURL: "https://llm.example/v1", Options: map[string]string{"wire": "responses"}}}, &prov)
	mk := func(name, cred string) events.Account {
		var a events.Account
		e.must(events.OpAccountsPut, events.AccountPut{Caller: c, Account: events.Account{ProviderID: prov.ID, Name: name}, Credential: &cred}, &a)
		return a
	}
	first, second, third := mk("first", "sk-1"), mk("second", "sk-2"), mk("third", "sk-3")
	if !first.Active || second.Active || third.Active {
		t.Errorf("first account must be auto-active alone: %v %v %v", first.Active, second.Active, third.Active)
	}
	if !first.HasCredential || first.KeyFingerprint == "" {
		t.Errorf("account = %+v: want hasCredential and a fingerprint", first)
	}
	// Nothing the API returns carries a credential.
	var list []events.Account
	e.must(events.OpAccountsList, events.ProviderAccounts{Caller: c, ProviderID: prov.ID}, &list)
	var raw string
	_ = e.db.QueryRow(context.Background(), `SELECT credential FROM artifacts.engine_accounts WHERE id = $1`, first.ID).Scan(&raw)
	if strings.Contains(raw, "sk-1") || !strings.HasPrefix(raw, "v1:"+first.KeyFingerprint+":") {
		t.Errorf("stored credential %q is not sealed", raw)
	}
	e.must(events.OpAccountsActivate, events.RefByID{Caller: c, ID: third.ID}, nil)
	var res events.ResolvedAccount
	e.must(events.OpAccountsResolve, events.AccountResolve{Caller: c, Engine: events.EngineCodex}, &res)
	if res.AccountID != third.ID || res.Credential != "sk-3" || res.Provider != "openai" ||
		res.APIURL != "https://llm.example/v1" || res.Options["wire"] != "responses" {
		t.Errorf("resolve active = %+v", res)
	}
	// Deleting the active account promotes another.
	e.must(events.OpAccountsDelete, events.RefByID{Caller: c, ID: third.ID}, nil)
	e.must(events.OpAccountsList, events.ProviderAccounts{Caller: c, ProviderID: prov.ID}, &list)
	active := 0
	for _, a := range list {
		if a.Active {
			active++
		}
	}
	if len(list) != 2 || active != 1 {
		t.Errorf("after deleting the active account: %+v", list)
	}
	// A provider comes back as stored: created, with its active account and
	// count, from a create and from an update alike.
	if prov.CreatedAt.IsZero() || prov.Accounts != 0 {
		t.Errorf("created provider = %+v; want its creation time, no accounts", prov)
	}
	var renamed events.Provider
	upd := prov
	upd.Name = "OpenAI EU"
	e.must(events.OpProvidersPut, events.ProviderPut{Caller: c, Provider: upd}, &renamed)
	if !renamed.CreatedAt.Equal(prov.CreatedAt) || renamed.Name != "OpenAI EU" || renamed.Accounts != 2 || renamed.ActiveID == "" {
		t.Errorf("updated provider = %+v; want created %v, 2 accounts, one active", renamed, prov.CreatedAt)
	}
	// Renaming without a credential keeps it; an update names the account alone.
	e.must(events.OpAccountsPut, events.AccountPut{Caller: c, Account: events.Account{ID: second.ID, Name: "renamed"}}, nil)
	e.must(events.OpAccountsResolve, events.AccountResolve{Caller: c, Engine: events.EngineCodex, AccountID: second.ID}, &res)
	if res.Credential != "sk-2" || res.Name != "renamed" {
		t.Errorf("rename lost the credential: %+v", res)
	}
	if err := e.call(events.OpAccountsResolve, events.AccountResolve{Caller: c, Engine: events.EngineClaudeCode, AccountID: second.ID}, nil); status(err) != http.StatusNotFound {
		t.Errorf("account resolved for another engine: %v", err)
	}
}

// TestSealedCredentialsAndRotation: unreadable without the key; after a
// rotation readable with the new key only.
func TestSealedCredentialsAndRotation(t *testing.T) {
	e := start(t)
	c := newCaller()
	var prov events.Provider
	e.must(events.OpProvidersPut, events.ProviderPut{Caller: c, Provider: events.Provider{Engine: events.EngineCursor, Slug: "cursor", Name: "Cursor"}}, &prov)
	cred := "cursor-key-123"
	var acc events.Account
	e.must(events.OpAccountsPut, events.AccountPut{Caller: c, Account: events.Account{ProviderID: prov.ID, Name: "main"}, Credential: &cred}, &acc)

	old, err := seal.Load("", e.dataDir) // the key file the service generated
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := seal.Generate()
	ctx := context.Background()
	st := &store.Store{DB: e.db, Keys: seal.Ring(other), Docs: &store.Docs{Root: e.dataDir}}
	if _, err := st.ResolveAccount(ctx, c.TenantID, events.EngineCursor, acc.ID); !errors.Is(err, seal.ErrWrongKey) {
		t.Errorf("resolve with another key = %v, want ErrWrongKey", err)
	}
	next, _, _ := seal.Generate()
	var n int
	err = pgx.BeginFunc(ctx, e.db, func(tx pgx.Tx) error {
		var err error
		n, err = store.RotateKey(ctx, tx, seal.Ring(old), next)
		return err
	})
	if err != nil || n != 1 {
		t.Fatalf("RotateKey = %d, %v", n, err)
	}
	st.Keys = seal.Ring(next)
	got, err := st.ResolveAccount(ctx, c.TenantID, events.EngineCursor, acc.ID)
	if err != nil || got.Credential != cred {
		t.Errorf("after rotation with the new key = %+v, %v", got, err)
	}
	st.Keys = seal.Ring(old)
	if _, err := st.ResolveAccount(ctx, c.TenantID, events.EngineCursor, acc.ID); !errors.Is(err, seal.ErrWrongKey) {
		t.Errorf("after rotation with the old key = %v, want ErrWrongKey", err)
	}
	var fp string
	_ = e.db.QueryRow(ctx, `SELECT key_fingerprint FROM artifacts.engine_accounts WHERE id = $1`, acc.ID).Scan(&fp)
	if fp != next.Fingerprint() {
		t.Errorf("fingerprint column = %s, want %s", fp, next.Fingerprint())
	}
	// A second run has nothing left to do.
	_ = pgx.BeginFunc(ctx, e.db, func(tx pgx.Tx) error { n, err = store.RotateKey(ctx, tx, seal.Ring(old), next); return err })
	if err != nil || n != 0 {
		t.Errorf("second rotation = %d, %v; want 0", n, err)
	}
}

// TestRotateKeyReplacesTheKeyFile rotates through the public entry point
// `clopen admin rotate-key` uses.
func TestRotateKeyReplacesTheKeyFile(t *testing.T) {
	e := start(t)
	c := newCaller()
	var prov events.Provider
	e.must(events.OpProvidersPut, events.ProviderPut{Caller: c, Provider: events.Provider{Engine: events.EnginePi, Slug: "pi", Name: "Pi"}}, &prov)
	cred := "pi-secret"
	var acc events.Account
	e.must(events.OpAccountsPut, events.AccountPut{Caller: c, Account: events.Account{ProviderID: prov.ID, Name: "main"}, Credential: &cred}, &acc)
	ctx := context.Background()
	got, err := RotateKey(ctx, e.db, Config{DataDir: e.dataDir}, "")
	if err != nil || got.Resealed != 1 || got.NewKey != "" || got.OldFingerprint == got.NewFingerprint {
		t.Fatalf("RotateKey = %+v, %v", got, err)
	}
	key, err := seal.Load("", e.dataDir)
	if err != nil || key.Fingerprint() != got.NewFingerprint {
		t.Fatalf("key file after rotation = %v, %v", key, err)
	}
	st := &store.Store{DB: e.db, Keys: seal.Ring(key), Docs: &store.Docs{Root: e.dataDir}}
	if res, err := st.ResolveAccount(ctx, c.TenantID, events.EnginePi, acc.ID); err != nil || res.Credential != cred {
		t.Errorf("with the new key file = %+v, %v", res, err)
	}
	// An environment key list without the current key changes nothing.
	_, envKey, _ := seal.Generate()
	_, err = RotateKey(ctx, e.db, Config{DataDir: e.dataDir, MasterKey: envKey}, "")
	if !errors.Is(err, seal.ErrUnknownKey) {
		t.Errorf("rotating from a key list without the current key = %v, want ErrUnknownKey", err)
	}
}

// A provider's apiUrl is where the worker will send the tenant's turns, so
// it may not name the worker's own loopback services, the private network
// or the metadata endpoint, and plain http only to hosts the operator
// allows; creating and updating are both checked.
func TestProviderURLsMustBePublic(t *testing.T) {
	e := start(t)
	c := newCaller()
	put := func(p events.Provider) error {
		return e.call(events.OpProvidersPut, events.ProviderPut{Caller: c, Provider: p}, nil)
	}
	for _, u := range []string{
		"http://127.0.0.1:8421/metrics", "https://127.0.0.1:4222", "https://localhost/v1", "https://[::1]/",
		"https://169.254.169.254/latest/meta-data/", "https://10.0.0.5/v1", "http://llm.example/v1",
		"https://key:secret@llm.example/v1", "file:///etc/passwd",
	} {
		err := put(events.Provider{Engine: events.EngineCodex, Slug: "p", Name: "P", APIURL: u})
		var apiErr *events.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || !strings.Contains(apiErr.Message, "apiUrl") {
			t.Errorf("provider with apiUrl %q: %v, want a 400 about the apiUrl", u, err)
		}
	}
	var prov events.Provider
	e.must(events.OpProvidersPut, events.ProviderPut{Caller: c, Provider: events.Provider{Engine: events.EngineCodex, Slug: "ok", Name: "OK",
		APIURL: "https://llm.example/v1"}}, &prov)
	prov.APIURL = "http://127.0.0.1:9/v1"
	if err := put(prov); err == nil {
		t.Error("an update to a loopback apiUrl was accepted")
	}
}
