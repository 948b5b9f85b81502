package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/bustoken"
)

// `clopen admin bus-keys` prints a set the services read back, whose
// public keys verify what the signing keys sign, and a new set each time.
func TestBusKeysMakesMatchingPairs(t *testing.T) {
	read := func() (bustoken.Keys, string) {
		var out bytes.Buffer
		if err := runBusKeys(nil, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			k, v, _ := strings.Cut(line, "=")
			env[k] = v
		}
		keys, err := bustoken.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.Check(bustoken.Need{CallerKey: true, CallerPubKey: true, DispatchKey: true, DispatchPubKey: true}); err != nil {
			t.Fatal(err)
		}
		return keys, out.String()
	}
	keys, first := read()
	v := keys.Verifier()
	cs, _ := keys.CallerSigner()
	ds, _ := keys.DispatchSigner()
	c, _ := cs.Sign(bustoken.Claims{TenantID: "t"})
	d, _ := ds.Sign(bustoken.Claims{TenantID: "t"})
	if _, err := v.Verify(c, bustoken.Caller); err != nil {
		t.Errorf("caller pair: %v", err)
	}
	if _, err := v.Verify(d, bustoken.Dispatch); err != nil {
		t.Errorf("dispatch pair: %v", err)
	}
	if _, second := read(); second == first {
		t.Error("two runs printed the same keys")
	}
	if err := runBusKeys([]string{"extra"}, io.Discard, io.Discard); err == nil {
		t.Error("an extra argument was accepted")
	}
}
