package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Bwrap confines processes with bubblewrap. The worker must run as root:
// bwrap then needs no user namespace, and the init it starts becomes the
// tenant's real, unprivileged uid (a uid mapped onto root would count
// against root's limits and own root's files).
type Bwrap struct {
	// Path is the bwrap executable; empty means "bwrap" on PATH.
	Path string
	// Init is the binary whose Main runs the sandbox's init (mounted
	// read-only inside); empty means this executable.
	Init string
}

// Name reports "bwrap".
func (b *Bwrap) Name() string { return "bwrap" }

// systemDirs are mounted read-only when the host has them (or linked, when
// the host links them into /usr).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemFiles are the pieces of /etc programs need: name resolution, TLS
// roots, the dynamic linker's cache, alternatives the /usr/bin links use.
var systemFiles = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf",
	"/etc/gai.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/alternatives", "/etc/localtime",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/mime.types", "/etc/gitconfig",
	"/etc/bash.bashrc", "/etc/profile", "/etc/inputrc"}

// Command returns the bwrap command line for argv under spec. As root it
// also gives spec's workspace, state dirs and sockets to spec's uid.
func (b *Bwrap) Command(spec Spec, argv []string) (*Command, error) {
	if err := spec.validate(); err != nil {
		return nil, fmt.Errorf("sandbox spec: %w", err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("sandbox: no command")
	}
	bin, err := b.bin()
	if err != nil {
		return nil, err
	}
	self := b.Init
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sandbox: own executable: %w", err)
		}
	}
	prog, err := seccompProgram(runtime.GOARCH)
	if err != nil {
		return nil, err
	}
	if err := Own(spec); err != nil {
		return nil, err
	}
	c := &Command{}
	fd := func(data []byte) (string, error) {
		f, err := dataFile(data)
		if err != nil {
			return "", err
		}
		c.ExtraFiles = append(c.ExtraFiles, f)
		return strconv.Itoa(2 + len(c.ExtraFiles)), nil
	}
	seccompFD, err := fd(prog)
	if err != nil {
		return nil, err
	}
	passwdFD, err := fd(fmt.Appendf(nil, "root:x:0:0::/:/usr/sbin/nologin\nagent:x:%d:%d::%s:/bin/sh\n", spec.UID, spec.GID, home(spec)))
	if err != nil {
		c.Close()
		return nil, err
	}
	groupFD, err := fd(fmt.Appendf(nil, "root:x:0:\nagent:x:%d:\n", spec.GID))
	if err != nil {
		c.Close()
		return nil, err
	}
	a := []string{bin,
		"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session", "--hostname", "sandbox",
		// The init needs these two to become the tenant's uid; becoming it
		// clears them, and no_new_privs keeps them from coming back.
		"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
		"--seccomp", seccompFD,
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	a = append(a, "--perms", "0755", "--dir", "/etc")
	for _, f := range systemFiles {
		a = append(a, "--ro-bind-try", f, f)
	}
	a = append(a, "--perms", "0644", "--ro-bind-data", passwdFD, "/etc/passwd",
		"--perms", "0644", "--ro-bind-data", groupFD, "/etc/group",
		"--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--dir", "/var/tmp")
	// bwrap makes a mount point's missing parents with the host's modes,
	// often 0700 and root's: make them traversable first.
	made := map[string]bool{}
	parents := func(p string) {
		var todo []string
		for d := filepath.Dir(p); d != "/" && d != "." && !made[d]; d = filepath.Dir(d) {
			made[d] = true
			todo = append(todo, d)
		}
		for i := len(todo) - 1; i >= 0; i-- {
			if todo[i] != "/tmp" {
				a = append(a, "--perms", "0755", "--dir", todo[i])
			}
		}
	}
	parents(insideInit)
	a = append(a, "--ro-bind", self, insideInit)
	for _, d := range spec.ReadOnly {
		parents(d)
		a = append(a, "--ro-bind", d, d)
	}
	for _, d := range spec.State {
		parents(d)
		a = append(a, "--bind", d, d)
	}
	cfg := initConfig{UID: spec.UID, GID: spec.GID, Limits: spec.Limits, Dir: spec.Workspace}
	if len(spec.CommandEnv) > 0 {
		envFD, err := fd([]byte(strings.Join(spec.CommandEnv, "\x00")))
		if err != nil {
			c.Close()
			return nil, err
		}
		parents(insideEnv)
		a = append(a, "--perms", "0400", "--ro-bind-data", envFD, insideEnv)
		cfg.EnvFile = insideEnv
	}
	for i, e := range spec.Endpoints {
		inside := filepath.Join(insideSockets, strconv.Itoa(i)+".sock")
		parents(inside)
		a = append(a, "--ro-bind", e.Socket, inside)
		cfg.Endpoints = append(cfg.Endpoints, Endpoint{Port: e.Port, Socket: inside})
	}
	for _, kv := range spec.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			c.Close()
			return nil, fmt.Errorf("sandbox: env %q: want NAME=value", kv)
		}
		a = append(a, "--setenv", k, v)
	}
	if spec.Workspace != "" {
		parents(spec.Workspace)
		a = append(a, "--bind", spec.Workspace, spec.Workspace)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	a = append(a, "--", insideInit, initArg, string(js), "--")
	c.Argv = append(a, argv...)
	return c, nil
}

func (b *Bwrap) bin() (string, error) {
	p, err := exec.LookPath(cmpOr(b.Path, "bwrap"))
	if err != nil {
		return "", fmt.Errorf("sandbox: bubblewrap not found (install the bubblewrap package): %w", err)
	}
	return p, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// home is the passwd home of the sandbox's user: its first state dir.
func home(spec Spec) string {
	if len(spec.State) > 0 {
		return spec.State[0]
	}
	return "/tmp"
}

// dataFile returns a file to read data from: an unlinked temporary file,
// since bwrap reads its fds after the worker may have moved on.
func dataFile(data []byte) (*os.File, error) {
	f, err := os.CreateTemp("", "clopen-sandbox-*")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	_ = os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return f, nil
}

// Own gives the workspace (once: it may be large) and the state dirs
// (every time: the worker writes files there) to spec's uid, so the unprivileged agent can use them. Without root it does
// nothing: the dirs must already be the uid's.
func Own(spec Spec) error {
	if os.Geteuid() != 0 {
		return nil
	}
	chown := func(root string, always bool) error {
		fi, err := os.Stat(root)
		if err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && !always && int(st.Uid) == spec.UID {
			return nil
		}
		return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil {
				err = os.Lchown(p, spec.UID, spec.GID)
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile by a process of the tenant still running
			}
			return err
		})
	}
	if spec.Workspace != "" {
		if err := chown(spec.Workspace, false); err != nil {
			return err
		}
	}
	for _, d := range spec.State {
		if err := chown(d, true); err != nil {
			return err
		}
	}
	return nil
}
