// Package seal encrypts secrets at rest with AES-256-GCM. The key comes
// from CLOPEN_MASTER_KEY (32 bytes, base64 or hex) or from a key file that
// is generated with mode 0600 on first use. Every envelope names the
// fingerprint of the key that sealed it, so a wrong key is reported as
// such, and a rotation can tell what is left to re-seal.
//
// Envelope: "v1:<fingerprint>:<base64(nonce || ciphertext)>"; the
// additional data binds an envelope to the record it belongs to, so a
// sealed value copied onto another row does not open.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvKey is the environment variable holding the master key.
const EnvKey = "CLOPEN_MASTER_KEY"

// KeyFile is the key file's name in the data dir.
const KeyFile = "secret.key"

// Errors callers match on.
var (
	ErrWrongKey  = errors.New("sealed with another key")
	ErrMalformed = errors.New("malformed sealed value")
)

// Key is a master key. The zero Key is unusable.
type Key struct {
	aead cipher.AEAD
	fp   string
	// sub is the root of the keys Derive returns, so the master key itself
	// is kept only inside the cipher.
	sub []byte
}

// NewKey returns the key for 32 raw bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != 32 {
		return nil, fmt.Errorf("master key: %d bytes, want 32", len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	return &Key{aead: aead, fp: hex.EncodeToString(sum[:4]), sub: mac(raw, "clopen seal derive v1")}, nil
}

// Derive returns a 32-byte key for one purpose, named by label: the same
// on every replica that holds this master key, independent of the key's
// other uses and of other labels.
func (k *Key) Derive(label string) []byte { return mac(k.sub, label) }

func mac(key []byte, label string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// ParseKey decodes a key written as base64 (standard or URL, padded or
// not) or hex.
func ParseKey(s string) (*Key, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return NewKey(b)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return NewKey(b)
		}
	}
	return nil, errors.New("master key: want 32 bytes as base64 or hex")
}

// Generate returns a fresh random key and its base64 text.
func Generate() (*Key, string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", err
	}
	k, err := NewKey(raw)
	return k, base64.StdEncoding.EncodeToString(raw), err
}

// Load returns the master key: from env when set, else from
// <dataDir>/secret.key, generating that file (0600) when it is missing.
func Load(env, dataDir string) (*Key, error) {
	if env != "" {
		k, err := ParseKey(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKey, err)
		}
		return k, nil
	}
	if dataDir == "" {
		return nil, fmt.Errorf("no %s and no data dir for %s", EnvKey, KeyFile)
	}
	path := filepath.Join(dataDir, KeyFile)
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := ParseKey(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	}
	if !os.IsNotExist(err) {
		return nil, err
	}
	k, text, err := Generate()
	if err != nil {
		return nil, err
	}
	if err := WriteKeyFile(path, text); err != nil {
		if errors.Is(err, os.ErrExist) { // another process generated it first
			return Load("", dataDir)
		}
		return nil, err
	}
	return k, nil
}

// WriteKeyFile creates path with the key text, mode 0600; it fails when the
// file exists.
func WriteKeyFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Fingerprint is the first 8 hex digits of the key's SHA-256.
func (k *Key) Fingerprint() string { return k.fp }

// Seal encrypts plaintext bound to ad.
func (k *Key) Seal(plaintext, ad string) (string, error) {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := k.aead.Seal(nonce, nonce, []byte(plaintext), []byte(ad))
	return "v1:" + k.fp + ":" + base64.StdEncoding.EncodeToString(out), nil
}

// FingerprintOf returns the fingerprint an envelope names.
func FingerprintOf(env string) (string, error) {
	parts := strings.SplitN(env, ":", 3)
	if len(parts) != 3 || parts[0] != "v1" || len(parts[1]) != 8 {
		return "", ErrMalformed
	}
	return parts[1], nil
}

// Open decrypts an envelope sealed with k for ad.
func (k *Key) Open(env, ad string) (string, error) {
	fp, err := FingerprintOf(env)
	if err != nil {
		return "", err
	}
	if fp != k.fp {
		return "", fmt.Errorf("%w %s (this key is %s)", ErrWrongKey, fp, k.fp)
	}
	raw, err := base64.StdEncoding.DecodeString(env[len("v1:")+9:])
	if err != nil || len(raw) < k.aead.NonceSize() {
		return "", ErrMalformed
	}
	n := k.aead.NonceSize()
	plain, err := k.aead.Open(nil, raw[:n], raw[n:], []byte(ad))
	if err != nil {
		return "", fmt.Errorf("%w: authentication failed", ErrMalformed)
	}
	return string(plain), nil
}
