package artifacts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/store"
)

// Rotated reports a key rotation.
type Rotated struct {
	Resealed       int
	OldFingerprint string
	NewFingerprint string
	// NewKey is set when the current key came from CLOPEN_MASTER_KEY and the
	// new one was generated: the operator must put it there.
	NewKey string
	// KeyFile is the key file now holding the new key, when file-based.
	KeyFile string
}

// RotateKey re-seals every engine-account credential of every tenant with a
// new master key, in one transaction.
//
// With a file key (cfg.MasterKey empty) the new key is written to
// secret.key.new first, the credentials are re-sealed, and only then does it
// replace secret.key (the old key stays in secret.key.old). An interrupted
// rotation resumes from secret.key.new, and credentials already sealed with
// it are skipped. With an environment key, next (CLOPEN_NEW_MASTER_KEY) or a
// generated key is used and returned for the operator to install. Running
// artifacts services keep the old key until restarted.
func RotateKey(ctx context.Context, db *pgxpool.Pool, cfg Config, next string) (Rotated, error) {
	old, err := seal.Load(cfg.MasterKey, cfg.DataDir)
	if err != nil {
		return Rotated{}, err
	}
	var newKey *seal.Key
	var out Rotated
	keyFile := filepath.Join(cfg.DataDir, seal.KeyFile)
	pending := keyFile + ".new"
	switch {
	case next != "":
		if newKey, err = seal.ParseKey(next); err != nil {
			return Rotated{}, fmt.Errorf("new key: %w", err)
		}
	case cfg.MasterKey == "":
		if b, err := os.ReadFile(pending); err == nil { // resume an interrupted rotation
			newKey, err = seal.ParseKey(string(b))
			if err != nil {
				return Rotated{}, fmt.Errorf("%s: %w", pending, err)
			}
			break
		}
		var text string
		if newKey, text, err = seal.Generate(); err != nil {
			return Rotated{}, err
		}
		if err := seal.WriteKeyFile(pending, text); err != nil {
			return Rotated{}, err
		}
	default:
		var text string
		if newKey, text, err = seal.Generate(); err != nil {
			return Rotated{}, err
		}
		out.NewKey = text
	}
	if newKey.Fingerprint() == old.Fingerprint() {
		return Rotated{}, errors.New("the new key is the current key")
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		out.Resealed, err = store.RotateKey(ctx, tx, old, newKey)
		return err
	})
	if err != nil {
		return Rotated{}, fmt.Errorf("re-seal credentials (nothing changed): %w", err)
	}
	out.OldFingerprint, out.NewFingerprint = old.Fingerprint(), newKey.Fingerprint()
	if cfg.MasterKey == "" {
		if next != "" {
			_ = os.Remove(pending)
			if err := seal.WriteKeyFile(pending, next); err != nil {
				return out, err
			}
		}
		_ = os.Remove(keyFile + ".old")
		if err := os.Rename(keyFile, keyFile+".old"); err != nil && !os.IsNotExist(err) {
			return out, fmt.Errorf("keep the old key: %w", err)
		}
		if err := os.Rename(pending, keyFile); err != nil {
			return out, fmt.Errorf("install the new key (it is in %s): %w", pending, err)
		}
		out.KeyFile = keyFile
	}
	return out, nil
}
