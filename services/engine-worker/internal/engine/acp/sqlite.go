package acp

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // an agent's SQLite session database
)

// openChatDB opens the SQLite database name in dir, an agent's directory
// under home, to edit a chat's sessions in it; nil when there is none.
// The agent writes these files, so it could have left a link in their
// place: every file SQLite would open must be a regular file, and dir must
// resolve to itself under home, or nothing outside the agent's home could
// be kept from being written.
func openChatDB(home, dir, name string) (*sql.DB, error) {
	path := filepath.Join(dir, name)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(home, dir)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != filepath.Join(realHome, rel) {
		return nil, fmt.Errorf("%s is not a directory of the agent's home", dir)
	}
	for _, f := range []string{name, name + "-wal", name + "-shm", name + "-journal"} {
		fi, err := os.Lstat(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", filepath.Join(dir, f))
		}
	}
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
}
