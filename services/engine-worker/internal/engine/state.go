package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// StateDir is the directory of the adapter instance of tenant and account
// under root (its HOME, or what holds it).
func StateDir(root, tenant, account string) string {
	return filepath.Join(root, PathToken(tenant, "_"), PathToken(account, "default"))
}

// PathToken makes s safe as one path element; empty stands for "".
func PathToken(s, empty string) string {
	if s == "" {
		return empty
	}
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, strings.ReplaceAll(s, "..", "__"))
}

// WriteIfChanged writes data to path atomically, unless it is there
// already: a CLI's settings, rewritten before every start.
func WriteIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".clopen-*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}
