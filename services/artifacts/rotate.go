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
	// NewKey is set when nothing was rotated: the source has only the
	// current key, and this generated one must first be added to every
	// replica's key list (CLOPEN_MASTER_KEY_FILE or CLOPEN_MASTER_KEY).
	NewKey string
	// KeyFile is the key file now holding the new key, when file-based.
	KeyFile string
}

// RotateKey re-seals every engine-account credential of every tenant with a
// new master key, in one transaction, and makes the database name it as the
// key that seals from now on. Running artifacts services follow without a
// restart: a seal waits for the rotation and then uses the key the database
// names, and a credential sealed with a key a service does not hold makes it
// read its key source again.
//
// With the data dir's key file (no CLOPEN_MASTER_KEY or _FILE), the new key
// (next, or generated) is written to secret.key.new first, so services on
// that data dir hold both keys throughout; then the credentials are
// re-sealed, and only then does it replace secret.key (the old key stays in
// secret.key.old). An interrupted rotation resumes from secret.key.new.
//
// With CLOPEN_MASTER_KEY or CLOPEN_MASTER_KEY_FILE, every replica must hold
// the new key before the rotation, so the new key is next if set, else the
// one key of the list other than the current one. With no other key in the
// list, nothing is changed and a generated key is returned in NewKey, to be
// added to every replica's list first.
func RotateKey(ctx context.Context, db *pgxpool.Pool, cfg Config, next string) (Rotated, error) {
	src := cfg.keySource()
	ring, err := seal.OpenRing(src)
	if err != nil {
		return Rotated{}, err
	}
	current, err := store.MasterKey(ctx, db)
	if err != nil {
		return Rotated{}, fmt.Errorf("master key record: %w", err)
	}
	if current == "" {
		current = ring.First().Fingerprint()
	}
	var newKey *seal.Key
	var out Rotated
	keyFile := filepath.Join(cfg.DataDir, seal.KeyFile)
	pending := keyFile + ".new"
	fileBased := src.Env == "" && src.File == ""
	switch {
	case next != "":
		if newKey, err = seal.ParseKey(next); err != nil {
			return Rotated{}, fmt.Errorf("new key: %w", err)
		}
		if fileBased {
			_ = os.Remove(pending)
			if err := seal.WriteKeyFile(pending, next); err != nil {
				return Rotated{}, err
			}
		} else if _, err := ring.Lookup(newKey.Fingerprint()); err != nil {
			return Rotated{}, fmt.Errorf("the new key %s is not in %s: add it to every replica's key list first, then rotate",
				newKey.Fingerprint(), keyListName(src))
		}
	case fileBased:
		if b, err := os.ReadFile(pending); err == nil { // resume an interrupted rotation
			if newKey, err = seal.ParseKey(string(b)); err != nil {
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
		for _, fp := range ring.Fingerprints() {
			if fp == current {
				continue
			}
			if newKey != nil {
				return Rotated{}, fmt.Errorf("%s holds several keys besides the current %s: say which is new with CLOPEN_NEW_MASTER_KEY",
					keyListName(src), current)
			}
			newKey, _ = ring.Lookup(fp)
		}
		if newKey == nil {
			_, text, err := seal.Generate()
			if err != nil {
				return Rotated{}, err
			}
			return Rotated{OldFingerprint: current, NewKey: text}, nil
		}
	}
	if newKey.Fingerprint() == current {
		return Rotated{}, errors.New("the new key is the current key")
	}
	if fileBased {
		if ring, err = seal.OpenRing(src); err != nil { // now with secret.key.new
			return Rotated{}, err
		}
	}
	if _, err := ring.Lookup(current); err != nil {
		return Rotated{}, fmt.Errorf("the current master key: %w", err)
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		out.Resealed, err = store.RotateKey(ctx, tx, ring, newKey)
		return err
	})
	if err != nil {
		return Rotated{}, fmt.Errorf("re-seal credentials (nothing changed): %w", err)
	}
	out.OldFingerprint, out.NewFingerprint = current, newKey.Fingerprint()
	if fileBased {
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

func keyListName(src seal.Source) string {
	if src.File != "" {
		return seal.EnvKeyFile + " (" + src.File + ")"
	}
	return seal.EnvKey
}
