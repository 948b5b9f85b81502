package privatepg

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// layout creates the cluster's directories and decides who runs the server.
// It returns the directory the cluster lives in (dir itself, or the fallback
// described in the package doc) and the credential child processes run with:
// nil unless clopen runs as root.
func layout(dir string, log *slog.Logger) (string, *syscall.Credential, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	root := os.Geteuid() == 0
	mode := os.FileMode(0o700)
	if root {
		mode = 0o711 // the server's user must traverse it, not list it
	}
	if err := mkdirAll(dir, mode); err != nil {
		return "", nil, err
	}
	var cred *syscall.Credential
	if root {
		if cred, err = serverUser(dir); err != nil {
			return "", nil, err
		}
		if blocked := unreachable(dir, cred); blocked != "" {
			alt, err := fallbackDir(dir)
			if err != nil {
				return "", nil, err
			}
			log.Warn("the server's user cannot reach the data dir; the cluster lives in a temporary dir instead",
				"dir", dir, "blocked_at", blocked, "uid", cred.Uid, "cluster_dir", alt)
			dir = alt
			if cred, err = serverUser(dir); err != nil {
				return "", nil, err
			}
		}
	}
	for _, sub := range []string{"pgdata", "run"} {
		p := filepath.Join(dir, sub)
		err := os.Mkdir(p, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("create %s: %w", p, err)
		}
		if cred != nil {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return "", nil, fmt.Errorf("chown %s: %w", p, err)
			}
		}
	}
	return dir, cred, nil
}

// mkdirAll creates dir and its missing parents with mode, regardless of the
// umask. Components that already exist are left alone: they are not ours.
func mkdirAll(dir string, mode os.FileMode) error {
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || p == filepath.Dir(p) {
			break
		}
		missing = append(missing, p)
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for _, p := range missing {
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	return nil
}

// serverUser picks the unprivileged account the server runs as under root:
// the owner of an existing Dir/pgdata (postgres insists on it), else the
// postgres system user, else nobody.
func serverUser(dir string) (*syscall.Credential, error) {
	pgdata := filepath.Join(dir, "pgdata")
	if fi, err := os.Stat(pgdata); err == nil {
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid == 0 {
			return nil, fmt.Errorf("use %s: owned by root, and postgres refuses to run as root; chown it to the postgres user", pgdata)
		}
		return &syscall.Credential{Uid: st.Uid, Gid: st.Gid, Groups: []uint32{}}, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
		}
	}
	return nil, errors.New("find a user to run postgres as: running as root and neither postgres nor nobody exists")
}

// unreachable returns the first component of dir that cred cannot search
// through, or "" when it can reach dir. It reads mode bits only (no ACLs),
// and only cred's primary group: children run without supplementary groups.
func unreachable(dir string, cred *syscall.Credential) string {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return dir
	}
	p := "/"
	for _, part := range append([]string{""}, strings.Split(strings.Trim(real, "/"), "/")...) {
		p = filepath.Join(p, part)
		fi, err := os.Stat(p)
		if err != nil {
			return p
		}
		st, perm := fi.Sys().(*syscall.Stat_t), fi.Mode().Perm()
		var ok bool
		switch {
		case st.Uid == cred.Uid:
			ok = perm&0o100 != 0
		case st.Gid == cred.Gid:
			ok = perm&0o010 != 0
		default:
			ok = perm&0o001 != 0
		}
		if !ok {
			return p
		}
	}
	return ""
}

// fallbackDir returns os.TempDir()/clopen-pg-<hash>, a root-owned directory
// only root can write, keyed by dir so each data dir keeps its own cluster
// from one run to the next. An existing path that is not such a directory
// (say, a symlink someone planted in /tmp) is an error, never followed.
func fallbackDir(dir string) (string, error) {
	sum := sha256.Sum256([]byte(strconv.Itoa(os.Geteuid()) + "\x00" + dir))
	alt := filepath.Join(os.TempDir(), "clopen-pg-"+hex.EncodeToString(sum[:6]))
	if err := os.Mkdir(alt, 0o711); err == nil {
		return alt, os.Chmod(alt, 0o711)
	} else if !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create %s: %w", alt, err)
	}
	fi, err := os.Lstat(alt)
	if err != nil {
		return "", fmt.Errorf("inspect %s: %w", alt, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || st.Uid != uint32(os.Geteuid()) || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("use %s: not a directory owned by us and writable only by us; remove it", alt)
	}
	return alt, nil
}
