package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// dataDir returns Clopen's data directory: $CLOPEN_DATA, else
// $XDG_DATA_HOME/clopen, else ~/.local/share/clopen, created if missing.
func dataDir(getenv func(string) string) (string, error) {
	dir := getenv("CLOPEN_DATA")
	if dir == "" {
		base := getenv("XDG_DATA_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("find a data dir: %w (set CLOPEN_DATA)", err)
			}
			base = filepath.Join(home, ".local", "share")
		}
		dir = filepath.Join(base, "clopen")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	// Traversable but not listable when we are root, so the private Postgres,
	// which runs as an unprivileged user, can reach its cluster below it;
	// everything secret inside has its own 0600 mode.
	mode := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		mode = 0o711
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return "", fmt.Errorf("create data dir: %w", err)
	}
	return dir, nil
}
