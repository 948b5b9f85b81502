package engines

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// DefaultProbeTimeout is how long an engine's version command may take
// unless Setup.ProbeTimeout says otherwise. It is generous: a Node CLI
// starting on a loaded machine takes tens of seconds, and one that is cut
// short is not offered.
const DefaultProbeTimeout = 2 * time.Minute

// ErrTimedOut says a version command did not answer in time: the engine
// may well be installed and working, only slow to start.
var ErrTimedOut = errors.New("did not answer in time")

// DefaultStartupProbeTimeout is how long a worker's start waits for an
// engine's version command (Offer) unless Setup.StartupProbeTimeout says
// otherwise: an engine slower than that is offered a little later, once a
// re-probe with the full ProbeTimeout finds it ready.
const DefaultStartupProbeTimeout = 15 * time.Second

func (s Setup) startupProbeTimeout() time.Duration {
	if s.StartupProbeTimeout > 0 {
		return s.StartupProbeTimeout
	}
	return DefaultStartupProbeTimeout
}

func (s Setup) probeTimeout() time.Duration {
	if s.ProbeTimeout > 0 {
		return s.ProbeTimeout
	}
	return DefaultProbeTimeout
}

// probeConcurrency is how many engines are checked at once: each check may
// start a CLI, and starting them all together on a small machine makes every
// one of them slow.
func probeConcurrency() int { return max(2, runtime.NumCPU()) }

// checkAll checks specs, a few at a time, in their order.
func checkAll(ctx context.Context, setup Setup, specs []Spec) []Status {
	out := make([]Status, len(specs))
	sem := make(chan struct{}, probeConcurrency())
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = s.Check(ctx, setup)
		})
	}
	wg.Wait()
	return out
}

// Pending is the engines a worker's start-up did not offer (Offer returns
// them), and those it did. Watch probes the first again until they are
// ready, and checks that the others stay installed.
type Pending struct {
	setup       Setup
	specs       []Spec
	states      []State       // each one's last state, to log changes only
	fixes       []string      // what would make each ready, as its check said
	offered     []Spec        // offered at start
	first, last time.Duration // the first wait, doubled after each round up to last
}

// Changes are how Watch tells a worker what it found.
type Changes struct {
	// Offer adds an engine that became ready, with its factory and
	// installed version.
	Offer func(typ events.EngineType, f engine.Factory, version string)
	// Withdraw removes an offered engine whose install is gone; why says
	// what was found. Turns already running on it go on.
	Withdraw func(typ events.EngineType, why string)
	// Unready, when set, is told why each engine is not offered and what
	// would make it ready: every pending engine when Watch starts, again
	// whenever its state changes, and a withdrawn one. An engine offered
	// later is ready again (Offer).
	Unready func(typ events.EngineType, state State, fix string)
}

// Watch runs until ctx ends. Every first interval (30 s) it checks that
// each offered engine's binary is still there, and withdraws one that is
// gone: it becomes pending again, so a reinstall offers it anew. Pending
// engines are probed again first after that interval and then at doubling
// intervals up to 5 minutes, and offered once ready. A nil Pending has
// nothing to watch. Each call watches on its own (every worker of a
// process offers the engines itself).
func (p *Pending) Watch(ctx context.Context, ch Changes) {
	if p == nil {
		return
	}
	log := p.setup.Logger
	wait := p.first
	next := time.Now().Add(wait) // the next probe of the pending engines
	pending, last := slices.Clone(p.specs), slices.Clone(p.states)
	unready := func(typ events.EngineType, st State, fix string) {
		if ch.Unready != nil {
			ch.Unready(typ, st, fix)
		}
	}
	for i, s := range pending {
		fix := ""
		if i < len(p.fixes) {
			fix = p.fixes[i]
		}
		unready(s.Type, last[i], fix)
	}
	var offered []Spec
	if ch.Withdraw != nil {
		offered = slices.Clone(p.offered)
	}
	for len(pending) > 0 || len(offered) > 0 {
		t := time.NewTimer(p.first)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		var still []Spec
		for _, s := range offered {
			why := missing(s.binFor(p.setup))
			if why == "" {
				still = append(still, s)
				continue
			}
			if log != nil {
				log.WarnContext(ctx, "engine withdrawn: its install is gone", "engine", s.Type, "why", why)
			}
			ch.Withdraw(s.Type, why)
			unready(s.Type, NotInstalled, "its install is gone ("+why+"): reinstall it with clopen engines install "+string(s.Type))
			pending, last = append(pending, s), append(last, NotInstalled)
			wait, next = p.first, time.Now() // look for a reinstall from now on
		}
		offered = still
		if len(pending) == 0 || time.Now().Before(next) {
			continue
		}
		statuses := checkAll(ctx, p.setup, pending)
		wait = min(2*wait, p.last)
		next = time.Now().Add(wait)
		var specs []Spec
		var states []State
		for i, st := range statuses {
			s := pending[i]
			if st.State == Ready {
				if log != nil {
					log.InfoContext(ctx, "engine now offered", "engine", st.Engine, "version", st.Installed)
				}
				ch.Offer(s.Type, s.Factory(s.binFor(p.setup), p.setup), st.Installed)
				if ch.Withdraw != nil {
					offered = append(offered, s)
				}
				continue
			}
			if st.State != last[i] && ctx.Err() == nil {
				if log != nil {
					log.WarnContext(ctx, "engine still not offered", "engine", st.Engine, "state", st.State, "fix", st.Message)
				}
				unready(s.Type, st.State, st.Message)
			}
			specs, states = append(specs, s), append(states, st.State)
		}
		pending, last = specs, states
	}
}

// missing says why bin cannot be run any more ("" when it can): the
// cheap check of an offered engine, no process started.
func missing(bin string) string {
	if bin == "" {
		return "" // nothing to check (an engine without a binary of its own)
	}
	fi, err := os.Stat(bin)
	switch {
	case err != nil:
		return fmt.Sprintf("%s: %v", bin, errors.Unwrap(err))
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return bin + " is not an executable file"
	}
	return ""
}

// modelServerTimeout bounds the model server check of Diagnose.
const modelServerTimeout = 3 * time.Second

// Diagnose is Doctor for a person: an engine that is ready but whose model
// server (the worker's own credentials' base URL: CLOPEN_LLM_BASE_URL, or
// the engine's own setting) does not accept a connection is reported as
// ModelUnreachable, with what to fix. A worker offers such an engine all
// the same (the server may come up later); its turns would fail until then.
func Diagnose(ctx context.Context, setup Setup) []Status {
	out := Doctor(ctx, setup)
	var wg sync.WaitGroup
	for i, s := range table {
		if out[i].State != Ready || s.ModelServer == nil {
			continue
		}
		base := s.ModelServer(ctx, setup)
		if base == "" {
			continue // the provider's own address
		}
		wg.Go(func() {
			if err := dialModelServer(ctx, base); err != nil {
				fix := "start it, or point the engine at a server that runs (its base URL setting)"
				if setup.llmOverride() != "" {
					fix = "start it, or set CLOPEN_LLM_BASE_URL to a server that runs"
				}
				out[i].State = ModelUnreachable
				out[i].Message = fmt.Sprintf("%s %s is installed, but its model server %s does not answer (%v): %s",
					s.Type, out[i].Installed, base, err, fix)
			}
		})
	}
	wg.Wait()
	return out
}

// dialModelServer checks that base accepts a TCP connection.
func dialModelServer(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("not a URL: %q", base)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	ctx, cancel := context.WithTimeout(ctx, modelServerTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return err
	}
	return c.Close()
}
