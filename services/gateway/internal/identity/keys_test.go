package identity

import (
	"bytes"
	"strings"
	"testing"
)

func TestMintKey(t *testing.T) {
	secret, prefix, hash := MintKey()
	if !strings.HasPrefix(secret, "clp_") || len(secret) != 47 || prefix != secret[:12] || !bytes.Equal(hash, HashKey(secret)) {
		t.Errorf("MintKey = %q, %q, %x", secret, prefix, hash)
	}
	if other, _, _ := MintKey(); other == secret {
		t.Error("two keys are equal")
	}
}

func TestWellFormedKey(t *testing.T) {
	good, _, _ := MintKey()
	tests := []struct {
		give string
		want bool
	}{
		{good, true},
		{"", false},
		{"clp_", false},
		{"xyz_" + good[4:], false},
		{good[:46], false},
		{good[:46] + "*", false},
		{good + "A", false},
	}
	for _, tt := range tests {
		if got := WellFormedKey(tt.give); got != tt.want {
			t.Errorf("WellFormedKey(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}
