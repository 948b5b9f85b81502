package seal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// EnvKeyFile names a file holding the master keys, read again whenever a
// sealed value names a key not yet known: how a running service learns a
// rotated key (a mounted secret is updated in place).
const EnvKeyFile = "CLOPEN_MASTER_KEY_FILE"

// ErrUnknownKey is a fingerprint that no key of the source has.
var ErrUnknownKey = errors.New("no master key with this fingerprint")

// Source says where the master keys come from. Env and File hold one key,
// or several separated by commas, spaces or newlines; which of them seals is
// the database's record (see the store), so the order does not matter.
// With neither, the keys are <DataDir>/secret.key (generated on first use)
// and, while or after a rotation, secret.key.new and secret.key.old.
type Source struct {
	Env     string // CLOPEN_MASTER_KEY
	File    string // CLOPEN_MASTER_KEY_FILE
	DataDir string
}

// Keyring is the master keys of a Source, by fingerprint. It is safe for
// concurrent use.
type Keyring struct {
	src   Source
	fixed bool // built from keys, never read again
	mu    sync.Mutex
	keys  []*Key // in the source's order; never empty
}

// Ring returns a keyring of fixed keys (tests, tools).
func Ring(keys ...*Key) *Keyring { return &Keyring{fixed: true, keys: keys} }

// OpenRing reads a source's keys, generating the data dir's key file when
// the source has no key at all.
func OpenRing(src Source) (*Keyring, error) {
	if src.Env != "" && src.File != "" {
		return nil, fmt.Errorf("set one of %s and %s, not both", EnvKey, EnvKeyFile)
	}
	if src.Env == "" && src.File == "" {
		// Generates secret.key when it is missing, as before.
		if _, err := Load("", src.DataDir); err != nil {
			return nil, err
		}
	}
	r := &Keyring{src: src}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload reads the source again.
func (r *Keyring) Reload() error {
	if r.fixed {
		return nil
	}
	keys, err := r.src.read()
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.keys = keys
	r.mu.Unlock()
	return nil
}

func (s Source) read() ([]*Key, error) {
	switch {
	case s.Env != "":
		return parseList(s.Env, EnvKey)
	case s.File != "":
		b, err := os.ReadFile(s.File)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKeyFile, err)
		}
		return parseList(string(b), s.File)
	}
	var keys []*Key
	for _, name := range []string{KeyFile, KeyFile + ".new", KeyFile + ".old"} {
		path := filepath.Join(s.DataDir, name)
		b, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue // a rotation renames them one at a time
		}
		if err != nil {
			return nil, err
		}
		k, err := ParseKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no master key in %s", filepath.Join(s.DataDir, KeyFile))
	}
	return keys, nil
}

func parseList(text, where string) ([]*Key, error) {
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("%s: no key", where)
	}
	keys := make([]*Key, 0, len(fields))
	for i, f := range fields {
		k, err := ParseKey(f)
		if err != nil {
			return nil, fmt.Errorf("%s: key %d: %w", where, i+1, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// First is the source's first key: the one that seals in a database that
// names none yet.
func (r *Keyring) First() *Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[0]
}

// Fingerprints lists the keys held, in the source's order.
func (r *Keyring) Fingerprints() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.keys))
	for i, k := range r.keys {
		out[i] = k.fp
	}
	return out
}

// Lookup returns the key with fingerprint fp, reading the source again
// once when it is not known: the key a rotation moved to.
func (r *Keyring) Lookup(fp string) (*Key, error) {
	if k := r.find(fp); k != nil {
		return k, nil
	}
	if err := r.Reload(); err != nil {
		return nil, fmt.Errorf("master key %s: %w", fp, err)
	}
	if k := r.find(fp); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("%w %s (this service has %s)", ErrUnknownKey, fp, strings.Join(r.Fingerprints(), ", "))
}

func (r *Keyring) find(fp string) *Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.keys {
		if k.fp == fp {
			return k
		}
	}
	return nil
}

// Open decrypts an envelope with whichever key sealed it.
func (r *Keyring) Open(env, ad string) (string, error) {
	fp, err := FingerprintOf(env)
	if err != nil {
		return "", err
	}
	k, err := r.Lookup(fp)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrWrongKey, err)
	}
	return k.Open(env, ad)
}
