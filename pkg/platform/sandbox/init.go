package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// The init process runs first inside the sandbox, as root with only
// CAP_SETUID and CAP_SETGID: it opens the endpoints' loopback listeners,
// becomes the tenant's uid (dropping every capability), sets the limits
// and starts the agent, then bridges each connection to its unix socket
// until the agent exits, and exits the same way.
const (
	initArg  = "__clopen-sandbox-init"
	probeArg = "__clopen-sandbox-probe"
	// insideInit is where the init binary is mounted in the sandbox.
	insideInit = "/.clopen/init"
	// insideSockets is where the endpoints' sockets are mounted.
	insideSockets = "/.clopen/sockets"
	// insideEnv is the file of Spec.CommandEnv, root's and mode 0400: the
	// init reads it before it becomes the tenant's uid.
	insideEnv = "/.clopen/env"
)

// initConfig is what the init process is told on its command line.
type initConfig struct {
	UID       int        `json:"uid"`
	GID       int        `json:"gid"`
	Limits    Limits     `json:"limits"`
	Endpoints []Endpoint `json:"endpoints"` // sockets as seen inside
	// Dir is the agent's working directory, entered once the init is the
	// tenant's uid (root without capabilities cannot enter it).
	Dir string `json:"dir,omitempty"`
	// EnvFile holds Spec.CommandEnv, NUL-separated.
	EnvFile string `json:"envFile,omitempty"`
}

// Main runs the sandbox's init or probe when the binary was started as one
// and never returns then; otherwise it returns at once. Every binary that
// starts sandboxed agents calls it first thing in main (and TestMain).
func Main() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case initArg:
		code, err := runInit(os.Args[2:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandbox init:", err)
		}
		os.Exit(code)
	case probeArg:
		if err := runProbe(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox probe:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

func runInit(args []string) (int, error) {
	if len(args) < 3 || args[1] != "--" {
		return 125, errors.New("usage: init CONFIG -- PROGRAM [ARG...]")
	}
	var cfg initConfig
	if err := json.Unmarshal([]byte(args[0]), &cfg); err != nil {
		return 125, fmt.Errorf("config: %w", err)
	}
	if cfg.UID <= 0 || cfg.GID <= 0 {
		return 125, fmt.Errorf("config: uid %d gid %d is privileged", cfg.UID, cfg.GID)
	}
	argv := args[2:]
	var env []string
	if cfg.EnvFile != "" {
		b, err := os.ReadFile(cfg.EnvFile)
		if err != nil {
			return 125, fmt.Errorf("command env: %w", err)
		}
		env = append(os.Environ(), strings.Split(string(b), "\x00")...)
	}
	var lns []net.Listener
	for _, e := range cfg.Endpoints {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(e.Port))
		if err != nil {
			return 125, fmt.Errorf("endpoint: %w", err)
		}
		lns = append(lns, ln)
	}
	if err := dropPrivileges(cfg.UID, cfg.GID); err != nil {
		return 125, err
	}
	if err := setLimits(cfg.Limits); err != nil {
		return 125, err
	}
	for i, ln := range lns {
		go Forward(ln, "unix", cfg.Endpoints[i].Socket)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = env // nil: the init's own
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 127, err
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 125, err
	}
	return 0, nil
}

// dropPrivileges makes the process uid:gid with no supplementary groups
// and no capabilities left in any set.
func dropPrivileges(uid, gid int) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("setgid %d: %w", gid, err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("setuid %d: %w", uid, err)
	}
	// Leaving uid 0 cleared the permitted and effective sets; clear the
	// inheritable one too.
	hdr := struct {
		version uint32
		pid     int32
	}{version: 0x20080522} // _LINUX_CAPABILITY_VERSION_3
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("capset: %w", errno)
	}
	return nil
}

func setLimits(l Limits) error {
	l = l.withDefaults()
	for _, r := range []struct {
		res int
		v   uint64
	}{{syscall.RLIMIT_DATA, l.MemoryBytes}, {rlimitNPROC, l.Procs}, {syscall.RLIMIT_CPU, l.CPUSeconds}, {syscall.RLIMIT_NOFILE, l.OpenFiles}} {
		if err := syscall.Setrlimit(r.res, &syscall.Rlimit{Cur: r.v, Max: r.v}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", r.res, err)
		}
	}
	return nil
}

// rlimitNPROC is RLIMIT_NPROC, which package syscall does not name.
const rlimitNPROC = 6

// Forward pipes each connection accepted on ln to a new connection to
// addr on network ("unix", "tcp"), both ways, each direction's end passed
// on, until ln is closed: the init's endpoint bridges, and the worker's
// bridges of loopback model servers.
func Forward(ln net.Listener, network, addr string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial(network, addr)
			if err != nil {
				return
			}
			defer u.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(u, c)
				if cw, ok := u.(interface{ CloseWrite() error }); ok {
					_ = cw.CloseWrite()
				}
				close(done)
			}()
			_, _ = io.Copy(c, u)
			if cw, ok := c.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
			}
			<-done
		}()
	}
}
