package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/skills"
)

// providerColumns are a provider's columns with its active account and its
// number of accounts, for scanProvider; the table is aliased p.
const providerColumns = `p.id::text, p.engine_type, p.slug, p.name, p.api_url, p.options, p.enabled, p.created_at,
	coalesce((SELECT a.id::text FROM artifacts.engine_accounts a WHERE a.tenant_id = p.tenant_id AND a.provider_id = p.id AND a.is_active), ''),
	(SELECT count(*) FROM artifacts.engine_accounts a WHERE a.tenant_id = p.tenant_id AND a.provider_id = p.id)`

func scanProvider(row pgx.Row) (events.Provider, error) {
	var p events.Provider
	var opts []byte
	var engine string
	if err := row.Scan(&p.ID, &engine, &p.Slug, &p.Name, &p.APIURL, &opts, &p.Enabled, &p.CreatedAt, &p.ActiveID, &p.Accounts); err != nil {
		return events.Provider{}, mapErr(err)
	}
	p.Engine = events.EngineType(engine)
	_ = json.Unmarshal(opts, &p.Options)
	return p, nil
}

// ListProviders returns the tenant's providers with their active account.
func (s *Store) ListProviders(ctx context.Context, tenant string) ([]events.Provider, error) {
	rows, err := s.DB.Query(ctx, `SELECT `+providerColumns+`
		FROM artifacts.engine_providers p WHERE p.tenant_id = $1 ORDER BY p.engine_type, p.slug`, tenant)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []events.Provider{}
	for rows.Next() {
		p, err := scanProvider(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// PutProvider creates (empty ID) or updates a provider, and returns it as
// stored: its creation time, active account and number of accounts too.
func (s *Store) PutProvider(ctx context.Context, tenant string, p events.Provider) (events.Provider, int64, error) {
	if !p.Engine.Valid() {
		return p, 0, fmt.Errorf("%w: engine %q", ErrInvalid, p.Engine)
	}
	if !skills.ValidSlug(p.Slug) || strings.TrimSpace(p.Name) == "" {
		return p, 0, fmt.Errorf("%w: a provider needs a slug and a name", ErrInvalid)
	}
	opts, _ := json.Marshal(orMap(p.Options))
	creating := p.ID == ""
	if creating {
		p.ID = uuid.NewString()
		p.Enabled = true
	} else if _, err := uuid.Parse(p.ID); err != nil {
		return p, 0, ErrNotFound
	}
	action := "provider.update"
	if creating {
		action = "provider.create"
	}
	rev, err := s.change(ctx, tenant, providerTarget(action, tenant, p.ID), func(tx pgx.Tx) error {
		if creating {
			_, err := tx.Exec(ctx, `INSERT INTO artifacts.engine_providers (tenant_id, id, engine_type, slug, name, api_url, options, enabled)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, tenant, p.ID, string(p.Engine), p.Slug, p.Name, p.APIURL, opts, p.Enabled)
			return err
		}
		return affected(tx.Exec(ctx, `UPDATE artifacts.engine_providers SET engine_type = $3, slug = $4, name = $5, api_url = $6,
			options = $7, enabled = $8 WHERE tenant_id = $1 AND id = $2`, tenant, p.ID, string(p.Engine), p.Slug, p.Name, p.APIURL, opts, p.Enabled))
	})
	if err != nil {
		return p, 0, err
	}
	got, err := scanProvider(s.DB.QueryRow(ctx, `SELECT `+providerColumns+`
		FROM artifacts.engine_providers p WHERE p.tenant_id = $1 AND p.id = $2`, tenant, p.ID))
	return got, rev, err
}

// DeleteProvider removes a provider and its accounts.
func (s *Store) DeleteProvider(ctx context.Context, tenant, id string) (int64, error) {
	if _, err := uuid.Parse(id); err != nil {
		return 0, ErrNotFound
	}
	return s.change(ctx, tenant, providerTarget("provider.delete", tenant, id), func(tx pgx.Tx) error {
		return affected(tx.Exec(ctx, `DELETE FROM artifacts.engine_providers WHERE tenant_id = $1 AND id = $2`, tenant, id))
	})
}

const accountColumns = `id::text, provider_id::text, name, is_active, credential IS NOT NULL, coalesce(key_fingerprint, ''), created_at, updated_at`

func scanAccount(row pgx.Row) (events.Account, error) {
	var a events.Account
	err := row.Scan(&a.ID, &a.ProviderID, &a.Name, &a.Active, &a.HasCredential, &a.KeyFingerprint, &a.CreatedAt, &a.UpdatedAt)
	return a, mapErr(err)
}

// ListAccounts returns a provider's accounts; credentials are never read. A
// provider the tenant does not have is ErrNotFound, not an empty list.
func (s *Store) ListAccounts(ctx context.Context, tenant, provider string) ([]events.Account, error) {
	if _, err := uuid.Parse(provider); err != nil {
		return nil, ErrNotFound
	}
	var one int
	if err := s.DB.QueryRow(ctx, `SELECT 1 FROM artifacts.engine_providers WHERE tenant_id = $1 AND id = $2`,
		tenant, provider).Scan(&one); err != nil {
		return nil, mapErr(err)
	}
	rows, err := s.DB.Query(ctx, `SELECT `+accountColumns+` FROM artifacts.engine_accounts
		WHERE tenant_id = $1 AND provider_id = $2 ORDER BY created_at, id`, tenant, provider)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []events.Account{}
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// PutAccount creates (empty ID) or updates an account. The credential, when
// given, is sealed bound to the account id; the first account of a provider
// becomes its active one. An update needs only the account's id: its
// provider never changes, so ProviderID is read only when creating.
func (s *Store) PutAccount(ctx context.Context, tenant string, a events.Account, credential *string) (events.Account, int64, error) {
	if strings.TrimSpace(a.Name) == "" {
		return a, 0, fmt.Errorf("%w: name is required", ErrInvalid)
	}
	creating := a.ID == ""
	if creating {
		if _, err := uuid.Parse(a.ProviderID); err != nil {
			return a, 0, ErrNotFound
		}
		a.ID = uuid.NewString()
	} else if _, err := uuid.Parse(a.ID); err != nil {
		return a, 0, ErrNotFound
	}
	rev, err := s.change(ctx, tenant, accountTarget(accountAction(creating, credential), tenant, a.ID), func(tx pgx.Tx) error {
		var sealed, fp *string
		if credential != nil && *credential != "" {
			key, err := s.SealingKey(ctx, tx)
			if err != nil {
				return err
			}
			env, err := key.Seal(*credential, sealAD(tenant, a.ID))
			if err != nil {
				return err
			}
			f := key.Fingerprint()
			sealed, fp = &env, &f
		}
		if creating {
			_, err := tx.Exec(ctx, `INSERT INTO artifacts.engine_accounts (tenant_id, id, provider_id, name, credential, key_fingerprint, is_active)
				VALUES ($1, $2, $3, $4, $5, $6, NOT EXISTS (SELECT 1 FROM artifacts.engine_accounts
					WHERE tenant_id = $1 AND provider_id = $3 AND is_active))`,
				tenant, a.ID, a.ProviderID, a.Name, sealed, fp)
			if err != nil && errors.Is(mapErr(err), ErrInvalid) {
				return ErrNotFound // no such provider for this tenant
			}
			return err
		}
		if credential == nil {
			return affected(tx.Exec(ctx, `UPDATE artifacts.engine_accounts SET name = $3, updated_at = now()
				WHERE tenant_id = $1 AND id = $2`, tenant, a.ID, a.Name))
		}
		return affected(tx.Exec(ctx, `UPDATE artifacts.engine_accounts SET name = $3, credential = $4, key_fingerprint = $5,
			updated_at = now() WHERE tenant_id = $1 AND id = $2`, tenant, a.ID, a.Name, sealed, fp))
	})
	if err != nil {
		return a, 0, err
	}
	got, err := scanAccount(s.DB.QueryRow(ctx, `SELECT `+accountColumns+` FROM artifacts.engine_accounts WHERE tenant_id = $1 AND id = $2`, tenant, a.ID))
	return got, rev, err
}

func sealAD(tenant, account string) string { return "engine_account:" + tenant + ":" + account }

// accountAction is what the audit log calls a PutAccount: a creation, a
// credential set or cleared (said by the action, since the credential
// itself is never recorded), or another update.
func accountAction(creating bool, credential *string) string {
	switch {
	case creating:
		return "account.create"
	case credential != nil && *credential != "":
		return "account.credential.set"
	case credential != nil:
		return "account.credential.clear"
	}
	return "account.update"
}

// DeleteAccount removes an account; when it was the active one, the oldest
// remaining account of its provider becomes active.
func (s *Store) DeleteAccount(ctx context.Context, tenant, id string) (int64, error) {
	if _, err := uuid.Parse(id); err != nil {
		return 0, ErrNotFound
	}
	return s.change(ctx, tenant, accountTarget("account.delete", tenant, id), func(tx pgx.Tx) error {
		var provider string
		var active bool
		err := tx.QueryRow(ctx, `DELETE FROM artifacts.engine_accounts WHERE tenant_id = $1 AND id = $2
			RETURNING provider_id::text, is_active`, tenant, id).Scan(&provider, &active)
		if err != nil {
			return err
		}
		if !active {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE artifacts.engine_accounts SET is_active = true, updated_at = now()
			WHERE tenant_id = $1 AND id = (SELECT id FROM artifacts.engine_accounts WHERE tenant_id = $1 AND provider_id = $2
				ORDER BY created_at, id LIMIT 1)`, tenant, provider)
		return err
	})
}

// ActivateAccount makes an account its provider's active one.
func (s *Store) ActivateAccount(ctx context.Context, tenant, id string) (int64, error) {
	if _, err := uuid.Parse(id); err != nil {
		return 0, ErrNotFound
	}
	return s.change(ctx, tenant, accountTarget("account.activate", tenant, id), func(tx pgx.Tx) error {
		var provider string
		if err := tx.QueryRow(ctx, `SELECT provider_id::text FROM artifacts.engine_accounts WHERE tenant_id = $1 AND id = $2`,
			tenant, id).Scan(&provider); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE artifacts.engine_accounts SET is_active = false WHERE tenant_id = $1 AND provider_id = $2 AND is_active`,
			tenant, provider); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE artifacts.engine_accounts SET is_active = true, updated_at = now() WHERE tenant_id = $1 AND id = $2`, tenant, id)
		return err
	})
}

// ResolveAccount returns an account's unsealed credential: the given
// account of engine, or the active account of engine's first enabled
// provider.
func (s *Store) ResolveAccount(ctx context.Context, tenant string, engine events.EngineType, id string) (events.ResolvedAccount, error) {
	var out events.ResolvedAccount
	var sealed *string
	q := `SELECT a.id::text, p.id::text, p.slug, a.name, a.credential, p.api_url, p.options FROM artifacts.engine_accounts a
		JOIN artifacts.engine_providers p ON p.tenant_id = a.tenant_id AND p.id = a.provider_id
		WHERE a.tenant_id = $1 AND p.engine_type = $2`
	args := []any{tenant, string(engine)}
	if id != "" {
		if _, err := uuid.Parse(id); err != nil {
			return out, ErrNotFound
		}
		q += ` AND a.id = $3`
		args = append(args, id)
	} else {
		q += ` AND a.is_active AND p.enabled ORDER BY p.created_at, p.id LIMIT 1`
	}
	if err := s.DB.QueryRow(ctx, q, args...).Scan(&out.AccountID, &out.ProviderID, &out.Provider, &out.Name, &sealed, &out.APIURL, &out.Options); err != nil {
		return out, mapErr(err)
	}
	if sealed != nil {
		plain, err := s.Keys.Open(*sealed, sealAD(tenant, out.AccountID))
		if err != nil {
			return out, fmt.Errorf("open credential of account %s: %w", out.AccountID, err)
		}
		out.Credential = plain
	}
	return out, nil
}

// SealingKey is the key new credentials are sealed with: the one the
// database names, read under a share lock that a rotation's update waits
// for (and that waits for a rotation). A database that names none yet gets
// the keyring's first. A key this service does not hold is an error naming
// it: nothing is sealed with a key the others have moved away from.
func (s *Store) SealingKey(ctx context.Context, tx pgx.Tx) (*seal.Key, error) {
	fp, err := lockMasterKey(ctx, tx, "FOR SHARE", s.Keys.First().Fingerprint())
	if err != nil {
		return nil, err
	}
	key, err := s.Keys.Lookup(fp)
	if err != nil {
		return nil, fmt.Errorf("credentials are sealed with master key %s since the last rotation; give this service that key (%s or %s): %w",
			fp, seal.EnvKeyFile, seal.EnvKey, err)
	}
	return key, nil
}

// lockMasterKey returns the sealing key's fingerprint under lock ("FOR
// SHARE" or "FOR UPDATE"), recording first when the database names none.
func lockMasterKey(ctx context.Context, tx pgx.Tx, lock, first string) (string, error) {
	var fp string
	q := `SELECT fingerprint FROM artifacts.master_key ` + lock
	err := tx.QueryRow(ctx, q).Scan(&fp)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err = tx.Exec(ctx, `INSERT INTO artifacts.master_key (fingerprint) VALUES ($1) ON CONFLICT DO NOTHING`, first); err == nil {
			err = tx.QueryRow(ctx, q).Scan(&fp)
		}
	}
	if err != nil {
		return "", fmt.Errorf("master key record: %w", err)
	}
	return fp, nil
}

// MasterKey is the fingerprint of the key the database says seals; "" if
// it names none yet.
func MasterKey(ctx context.Context, db *pgxpool.Pool) (string, error) {
	var fp string
	err := db.QueryRow(ctx, `SELECT fingerprint FROM artifacts.master_key`).Scan(&fp)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return fp, err
}

// RecordMasterKey names fp as the sealing key when the database names none.
func RecordMasterKey(ctx context.Context, db *pgxpool.Pool, fp string) error {
	_, err := db.Exec(ctx, `INSERT INTO artifacts.master_key (fingerprint) VALUES ($1) ON CONFLICT DO NOTHING`, fp)
	return err
}

// RotateKey re-seals every credential of every tenant with next, opening
// each with whichever key of ring sealed it, and names next as the sealing
// key, in tx; it returns how many it re-sealed. It holds the sealing key's
// record for update first, so a credential saved meanwhile is sealed with
// next, or sealed before and re-sealed here. Credentials already sealed
// with next are left alone, so an interrupted rotation can be run again.
func RotateKey(ctx context.Context, tx pgx.Tx, ring *seal.Keyring, next *seal.Key) (int, error) {
	if _, err := lockMasterKey(ctx, tx, "FOR UPDATE", ring.First().Fingerprint()); err != nil {
		return 0, err
	}
	n := 0
	for _, t := range sealedTables {
		k, err := resealTable(ctx, tx, ring, next, t)
		n += k
		if err != nil {
			return n, err
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE artifacts.master_key SET fingerprint = $1, rotated_at = now()`, next.Fingerprint()); err != nil {
		return n, err
	}
	return n, nil
}

// SealedWithOtherKeys counts, by key fingerprint, the stored credentials
// sealed with none of the keys fingerprints: a replica that finds any runs
// with keys the others do not share, and could open none of them.
func (s *Store) SealedWithOtherKeys(ctx context.Context, fingerprints ...string) (map[string]int, error) {
	rows, err := s.DB.Query(ctx, `SELECT key_fingerprint, count(*) FROM artifacts.engine_accounts
		WHERE credential IS NOT NULL AND (key_fingerprint IS NULL OR key_fingerprint <> ALL($1)) GROUP BY 1`, fingerprints)
	if err != nil {
		return nil, fmt.Errorf("credential keys: %w", err)
	}
	out := map[string]int{}
	var fp *string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&fp, &n}, func() error {
		name := "(none)"
		if fp != nil {
			name = *fp
		}
		out[name] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("credential keys: %w", err)
	}
	return out, nil
}

// sealedTable is a table holding sealed credentials: its name, the column
// that with tenant_id keys a row, and the associated data a row's
// credential is sealed with.
type sealedTable struct {
	name, key string
	ad        func(tenant, key string) string
}

// sealedTables are every table RotateKey re-seals.
var sealedTables = []sealedTable{
	{name: "artifacts.engine_accounts", key: "id", ad: sealAD},
	{name: "artifacts.source_credentials", key: "project_id", ad: sourceAD},
	{name: "artifacts.mcp_servers", key: "id", ad: mcpAD},
	{name: "artifacts.mcp_oauth_pending", key: "nonce", ad: pendingAD},
	{name: "artifacts.integration_accounts", key: "id", ad: integrationAD},
	// An adopted MCP server's credential, kept to put back: sealed for
	// the server's row.
	{name: "artifacts.integration_projections", key: "server_id", ad: mcpAD},
}

// resealTable re-seals with next every credential of t not sealed with it
// yet, and says how many it re-sealed.
func resealTable(ctx context.Context, tx pgx.Tx, ring *seal.Keyring, next *seal.Key, t sealedTable) (int, error) {
	rows, err := tx.Query(ctx, `SELECT tenant_id::text, `+t.key+`::text, credential FROM `+t.name+`
		WHERE credential IS NOT NULL FOR UPDATE`)
	if err != nil {
		return 0, err
	}
	type rec struct{ tenant, id, env string }
	var recs []rec
	for rows.Next() {
		var r rec
		if err := rows.Scan(&r.tenant, &r.id, &r.env); err != nil {
			rows.Close()
			return 0, err
		}
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if fp, _ := seal.FingerprintOf(r.env); fp == next.Fingerprint() {
			continue
		}
		plain, err := ring.Open(r.env, t.ad(r.tenant, r.id))
		if err != nil {
			return n, fmt.Errorf("%s %s of tenant %s: %w", t.name, r.id, r.tenant, err)
		}
		env, err := next.Seal(plain, t.ad(r.tenant, r.id))
		if err != nil {
			return n, err
		}
		if _, err := tx.Exec(ctx, `UPDATE `+t.name+` SET credential = $3, key_fingerprint = $4
			WHERE tenant_id = $1 AND `+t.key+` = $2`, r.tenant, r.id, env, next.Fingerprint()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
