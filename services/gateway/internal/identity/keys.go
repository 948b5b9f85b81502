package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// API keys are "clp_" followed by 32 random bytes in unpadded base64url
// (43 characters). Only their SHA-256 and their first PrefixLen characters
// are stored.
const (
	KeyPrefix = "clp_"
	KeyLen    = len(KeyPrefix) + 43
	PrefixLen = 12
)

// MintKey returns a new secret key, its display prefix and its hash.
func MintKey() (secret, prefix string, hash []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	secret = KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, secret[:PrefixLen], HashKey(secret)
}

// HashKey returns the SHA-256 of a secret, the form keys are looked up by.
func HashKey(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// WellFormedKey reports whether s has the shape of an API key, so that
// garbage is refused without a database round trip.
func WellFormedKey(s string) bool {
	if len(s) != KeyLen || !strings.HasPrefix(s, KeyPrefix) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s[len(KeyPrefix):])
	return err == nil
}
