package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// probeFacts is what the probe reports from inside a sandbox.
type probeFacts struct {
	UID, GID      int
	Groups        []int
	CapEff        string
	CapPrm        string
	NoNewPrivs    string
	Seccomp       string
	Procs         int      // entries of /proc that are pids
	Interfaces    []string // from /proc/net/dev
	WroteWorkdir  bool
	SawHidden     bool   // a host file outside every mount was visible
	Unshare       string // the error of unshare(CLONE_NEWUSER)
	Endpoint      string // what the endpoint answered
	LimitAS       uint64
	LimitNPROC    uint64
	LimitCPU      uint64
	EnvironOfInit bool // could read /proc/1/environ
}

func runProbe(args []string, stdout io.Writer) error {
	if len(args) != 2 {
		return errors.New("usage: probe HIDDEN PORT")
	}
	var f probeFacts
	f.UID, f.GID = os.Getuid(), os.Getgid()
	f.Groups, _ = os.Getgroups()
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "CapEff":
				f.CapEff = v
			case "CapPrm":
				f.CapPrm = v
			case "NoNewPrivs":
				f.NoNewPrivs = v
			case "Seccomp":
				f.Seccomp = v
			}
		}
	}
	if ents, err := os.ReadDir("/proc"); err == nil {
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				f.Procs++
			}
		}
	}
	if dev, err := os.ReadFile("/proc/net/dev"); err == nil {
		for _, line := range strings.Split(string(dev), "\n") {
			if name, _, ok := strings.Cut(line, ":"); ok {
				f.Interfaces = append(f.Interfaces, strings.TrimSpace(name))
			}
		}
	}
	if wd, err := os.Getwd(); err == nil {
		f.WroteWorkdir = os.WriteFile(filepath.Join(wd, ".probe"), []byte("ok"), 0o600) == nil
	}
	_, err := os.Stat(args[0])
	f.SawHidden = err == nil
	_, err = os.ReadFile("/proc/1/environ")
	f.EnvironOfInit = err == nil
	if err := syscall.Unshare(syscall.CLONE_NEWUSER); err != nil {
		f.Unshare = err.Error()
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+args[1], 5*time.Second); err == nil {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		f.Endpoint = strings.TrimSpace(line)
		c.Close()
	}
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_DATA, &r) == nil {
		f.LimitAS = r.Cur
	}
	if syscall.Getrlimit(rlimitNPROC, &r) == nil {
		f.LimitNPROC = r.Cur
	}
	if syscall.Getrlimit(syscall.RLIMIT_CPU, &r) == nil {
		f.LimitCPU = r.Cur
	}
	return json.NewEncoder(stdout).Encode(f)
}

// Check starts the probe in a sandbox made for it and verifies that it
// runs as the unprivileged uid with no capabilities, no_new_privs and the
// seccomp filter, sees only its own processes, its workspace and no host
// file, has loopback only, reaches its endpoint and has its limits.
func (b *Bwrap) Check(ctx context.Context) error {
	return CheckSandbox(ctx, b)
}

// CheckSandbox runs the probe in sb and verifies it; implementations of
// Sandbox other than Bwrap use it for their own Check.
func CheckSandbox(ctx context.Context, sb Sandbox) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s: this process must run as root to give sandboxed processes their own uids", sb.Name())
	}
	dir, err := os.MkdirTemp("", "clopen-sandbox-check-")
	if err != nil {
		return fmt.Errorf("%s check: %w", sb.Name(), err)
	}
	defer os.RemoveAll(dir)
	ws, state, hidden := filepath.Join(dir, "ws"), filepath.Join(dir, "state"), filepath.Join(dir, "hidden")
	for _, d := range []string{ws, state} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("%s check: %w", sb.Name(), err)
		}
	}
	if err := os.WriteFile(hidden, []byte("secret"), 0o644); err != nil {
		return fmt.Errorf("%s check: %w", sb.Name(), err)
	}
	sock := filepath.Join(dir, "ep.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("%s check: %w", sb.Name(), err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o666); err != nil {
		return fmt.Errorf("%s check: %w", sb.Name(), err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "endpoint ok\n")
			c.Close()
		}
	}()
	const uid, port = 65533, 18089
	limits := Limits{MemoryBytes: 3 << 30, Procs: 300, CPUSeconds: 120}
	spec := Spec{UID: uid, GID: uid, Workspace: ws, State: []string{state},
		Endpoints: []Endpoint{{Port: port, Socket: sock}}, Limits: limits}
	cmd, err := sb.Command(spec, []string{insideInit, probeArg, hidden, strconv.Itoa(port)})
	if err != nil {
		return fmt.Errorf("%s check: %w", sb.Name(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Argv[0], cmd.Argv[1:]...)
	// The probe gets none of the worker's environment, as no agent does.
	c.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	c.ExtraFiles = cmd.ExtraFiles
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err = c.Run()
	cmd.Close()
	if err != nil {
		return fmt.Errorf("%s check: probe: %w: %s", sb.Name(), err, strings.TrimSpace(stderr.String()))
	}
	var f probeFacts
	if err := json.Unmarshal(stdout.Bytes(), &f); err != nil {
		return fmt.Errorf("%s check: probe output %q: %w", sb.Name(), stdout.String(), err)
	}
	var failed []string
	fail := func(format string, a ...any) { failed = append(failed, fmt.Sprintf(format, a...)) }
	if f.UID != uid || f.GID != uid || len(f.Groups) > 1 || (len(f.Groups) == 1 && f.Groups[0] != uid) {
		fail("runs as uid %d gid %d groups %v, want %d", f.UID, f.GID, f.Groups, uid)
	}
	if strings.Trim(f.CapEff, "0") != "" || strings.Trim(f.CapPrm, "0") != "" {
		fail("has capabilities (effective %s, permitted %s)", f.CapEff, f.CapPrm)
	}
	if f.NoNewPrivs != "1" {
		fail("no_new_privs is %q", f.NoNewPrivs)
	}
	if f.Seccomp != "2" {
		fail("seccomp mode is %q, want a filter", f.Seccomp)
	}
	if f.Unshare == "" {
		fail("could create a user namespace")
	}
	if f.Procs > 3 {
		fail("sees %d processes: not its own pid namespace", f.Procs)
	}
	if f.EnvironOfInit {
		fail("could read its init's environment")
	}
	for _, i := range f.Interfaces {
		if i != "lo" {
			fail("has network interface %q", i)
		}
	}
	if !f.WroteWorkdir {
		fail("cannot write its workspace")
	}
	if f.SawHidden {
		fail("sees a host file outside its mounts")
	}
	if f.Endpoint != "endpoint ok" {
		fail("cannot reach its endpoint (got %q)", f.Endpoint)
	}
	if f.LimitAS != limits.MemoryBytes || f.LimitNPROC != limits.Procs || f.LimitCPU != limits.CPUSeconds {
		fail("limits are DATA %d NPROC %d CPU %d, want %d %d %d", f.LimitAS, f.LimitNPROC, f.LimitCPU,
			limits.MemoryBytes, limits.Procs, limits.CPUSeconds)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s check: the probe %s", sb.Name(), strings.Join(failed, "; "))
	}
	return nil
}
