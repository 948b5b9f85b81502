package seal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyringReadsListsAndLearnsNewKeys(t *testing.T) {
	a, aText, _ := Generate()
	b, bText, _ := Generate()
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte(aText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRing(Source{File: file})
	if err != nil {
		t.Fatal(err)
	}
	env, _ := b.Seal("secret", "ad")
	if _, err := r.Open(env, "ad"); !errors.Is(err, ErrUnknownKey) || !errors.Is(err, ErrWrongKey) {
		t.Fatalf("Open with a key the file lacks = %v, want ErrUnknownKey", err)
	}
	// The file gains the key: the next miss reads it again.
	if err := os.WriteFile(file, []byte(aText+"\n"+bText+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Open(env, "ad"); err != nil || got != "secret" {
		t.Fatalf("Open after the file gained the key = %q, %v", got, err)
	}
	if r.First().Fingerprint() != a.Fingerprint() {
		t.Errorf("First = %s, want the file's first %s", r.First().Fingerprint(), a.Fingerprint())
	}

	// An environment list, commas or spaces.
	r, err = OpenRing(Source{Env: aText + ", " + bText})
	if err != nil || strings.Join(r.Fingerprints(), ",") != a.Fingerprint()+","+b.Fingerprint() {
		t.Fatalf("env list = %v, %v", r, err)
	}
	for _, bad := range []Source{{Env: aText, File: file}, {Env: aText + ",nope"}, {Env: " , "}, {File: file + ".missing"}} {
		if _, err := OpenRing(bad); err == nil {
			t.Errorf("OpenRing(%+v) = nil error", bad)
		}
	}
}

// The data dir's key is generated once; during and after a rotation the
// ring holds secret.key.new and secret.key.old too, and tolerates the
// moment between the two renames when secret.key is missing.
func TestKeyringOfTheDataDir(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRing(Source{DataDir: dir})
	if err != nil || len(r.Fingerprints()) != 1 {
		t.Fatalf("OpenRing(empty dir) = %v, %v; want one generated key", r, err)
	}
	old := r.First()
	next, text, _ := Generate()
	if err := WriteKeyFile(filepath.Join(dir, KeyFile+".new"), text); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, KeyFile), filepath.Join(dir, KeyFile+".old")); err != nil {
		t.Fatal(err)
	}
	for _, k := range []*Key{next, old} {
		if _, err := r.Lookup(k.Fingerprint()); err != nil {
			t.Errorf("Lookup(%s) mid-rotation = %v", k.Fingerprint(), err)
		}
	}
}

// FuzzKeyList decodes key lists as an operator writes them.
func FuzzKeyList(f *testing.F) {
	_, a, _ := Generate()
	_, b, _ := Generate()
	for _, s := range []string{a, a + "," + b, a + "\n" + b + "\n", "", ",,", "zz", a + " x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := parseList(s, "test")
		if err != nil {
			if keys != nil {
				t.Fatal("keys with an error")
			}
			return
		}
		if len(keys) == 0 {
			t.Fatal("no keys and no error")
		}
		for _, k := range keys {
			env, err := k.Seal("x", "ad")
			if err != nil {
				t.Fatal(err)
			}
			if got, err := k.Open(env, "ad"); err != nil || got != "x" {
				t.Fatalf("round trip = %q, %v", got, err)
			}
		}
	})
}
