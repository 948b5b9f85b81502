package engines

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// State is an engine's readiness on this machine.
type State string

// The states, in the order Check tests them.
const (
	NotInstalled State = "not-installed"
	// NotResponding: installed, but its version command did not answer
	// within the probe's limit (a busy machine); nothing says it is broken.
	NotResponding State = "not-responding"
	NeedsUpdate   State = "needs-update"
	NeedsAccount  State = "needs-account"
	Ready         State = "ready"
	// ModelUnreachable: ready, but the model server its runs would use
	// does not answer (Diagnose only; a worker still offers the engine).
	ModelUnreachable State = "model-unreachable"
)

// Status is an engine's readiness and what to do about it.
type Status struct {
	Engine    events.EngineType
	State     State
	Installed string // the installed version, if any
	Required  string // the pinned version
	// Message says what is wrong and the command that fixes it.
	Message string
}

// Check reports whether an engine is ready: installed at the pinned
// version, with credentials configured. The engine's version command has
// setup's probe limit to answer.
func (s Spec) Check(ctx context.Context, setup Setup) Status {
	ctx, cancel := context.WithTimeout(ctx, setup.probeTimeout())
	defer cancel()
	if s.External != nil {
		return s.checkExternal(ctx, setup)
	}
	st := Status{Engine: s.Type, Required: s.Version}
	install := fmt.Sprintf("run `clopen engines install %s`", s.Type)
	v, err := s.InstalledVersion(ctx, setup.Root())
	if errors.Is(err, ErrNotInstalled) {
		v, err = s.otherVersion(ctx, setup.Root())
	}
	switch {
	case errors.Is(err, ErrNotInstalled):
		st.State, st.Message = NotInstalled, fmt.Sprintf("%s is not installed in %s: %s", s.Type, setup.Root(), install)
		return st
	case errors.Is(err, ErrTimedOut):
		st.State, st.Message = NotResponding, fmt.Sprintf("%s is installed but `%s` did not answer within %v (is the machine busy?): "+
			"a worker probes it again until it answers; run `clopen engines doctor` again to check now",
			s.Type, strings.Join(append([]string{filepath.Base(s.Bin)}, s.VersionArgs...), " "), setup.probeTimeout())
		return st
	case err != nil:
		st.State, st.Message = NotInstalled, fmt.Sprintf("%s is installed but does not run (%v): %s", s.Type, err, install)
		return st
	}
	st.Installed = v
	if v != s.Version {
		st.State, st.Message = NeedsUpdate, fmt.Sprintf("%s %s is installed, %s is required: %s", s.Type, v, s.Version, install)
		return st
	}
	return s.withAccount(ctx, setup, st)
}

// withAccount finishes the status of an installed engine: ready when a run
// can get credentials (the worker's own, or its tenant's account when the
// worker resolves tenants' accounts), else needs-account with the fix.
func (s Spec) withAccount(ctx context.Context, setup Setup, st Status) Status {
	if s.Account != nil {
		err := s.Account(ctx, setup)
		switch {
		case setup.Accounts != nil && (err != nil || !setup.OperatorCredentials):
			// Tenants bring their own accounts; the worker lends none.
			st.State, st.Message = Ready, fmt.Sprintf("%s %s is ready for tenants with a %s account", s.Type, st.Installed, s.Type)
			return st
		case err != nil:
			msg := err.Error()
			var ee *engine.Error
			if errors.As(err, &ee) {
				msg = ee.Msg
			}
			st.State, st.Message = NeedsAccount, msg+"; or run `clopen dev --fakellm` to try it against the mock LLM"
			return st
		}
	}
	st.State, st.Message = Ready, fmt.Sprintf("%s %s is ready", s.Type, st.Installed)
	return st
}

// checkExternal checks an engine Clopen does not install: its executable
// must resolve and its account be configured; an untested one says so.
func (s Spec) checkExternal(ctx context.Context, setup Setup) Status {
	st := Status{Engine: s.Type, Required: s.Version}
	bin, err := s.External(setup)
	if err != nil {
		st.State, st.Message = NotInstalled, strings.TrimPrefix(err.Error(), ErrNotInstalled.Error()+": ")
		st.Message = strings.TrimPrefix(st.Message, ErrNotInstalled.Error()+"\n")
		return st
	}
	st.Installed = "unknown"
	if v, err := runVersion(ctx, bin, s.VersionArgs); err == nil {
		st.Installed = v
	}
	if s.Account != nil {
		if err := s.Account(ctx, setup); err != nil {
			var ee *engine.Error
			msg := err.Error()
			if errors.As(err, &ee) {
				msg = ee.Msg
			}
			st.State, st.Message = NeedsAccount, msg
			return st
		}
	}
	st.State, st.Message = Ready, fmt.Sprintf("%s (%s) is ready", s.Type, bin)
	if s.Untested {
		st.Message += "; untested: Clopen's profile for it follows the protocol and never ran against this CLI"
	}
	return st
}

// binFor is the executable the worker runs for an engine that Check found
// ready.
func (s Spec) binFor(setup Setup) string {
	if s.External != nil {
		bin, _ := s.External(setup)
		return bin
	}
	return s.BinPath(setup.Root())
}

// otherVersion finds an install of another version (an upgrade pending).
func (s Spec) otherVersion(ctx context.Context, root string) (string, error) {
	entries, _ := os.ReadDir(filepath.Join(root, string(s.Type)))
	for i := len(entries) - 1; i >= 0; i-- {
		name := entries[i].Name()
		if !entries[i].IsDir() || name == s.Version || strings.Contains(name, ".partial-") {
			continue
		}
		if v, err := s.versionAt(ctx, filepath.Join(root, string(s.Type), name)); err == nil {
			return v, nil
		}
	}
	return "", ErrNotInstalled
}

// Doctor checks every engine of the table (see checkAll).
func Doctor(ctx context.Context, setup Setup) []Status { return checkAll(ctx, setup, table) }

// Available returns the worker's factories for the engines that are ready,
// and the status of every engine, so the caller can log why one is not
// offered. The scripted engine, which every worker has, is not in it.
func Available(ctx context.Context, setup Setup) (map[events.EngineType]engine.Factory, []Status) {
	return availableOf(ctx, setup, table)
}

func availableOf(ctx context.Context, setup Setup, specs []Spec) (map[events.EngineType]engine.Factory, []Status) {
	factories := map[events.EngineType]engine.Factory{}
	statuses := checkAll(ctx, setup, specs)
	for i, s := range specs {
		if statuses[i].State == Ready {
			factories[s.Type] = s.Factory(s.binFor(setup), setup)
		}
	}
	return factories, statuses
}

// Offer is Available for a worker's start-up: it logs each engine that is
// not offered, with the fix, and returns the factories of the ready ones
// with the versions the check found installed, which the worker advertises
// without starting each CLI a second time.
//
// A worker's start waits for no slow engine: each version command has
// Setup.StartupProbeTimeout (DefaultStartupProbeTimeout) here, and one that
// has not answered by then is not offered yet. The engines not offered come
// back as Pending, for the worker to probe again (Pending.Watch) with the
// full ProbeTimeout and offer once they are ready.
//
// Without a working sandbox (Setup.NoSandbox) it offers none: an agent runs
// commands a model chose, and never unconfined unless the operator says so
// (CLOPEN_SANDBOX=off).
func Offer(ctx context.Context, setup Setup) (map[events.EngineType]engine.Factory, map[events.EngineType]string, *Pending) {
	if setup.NoSandbox != nil {
		if setup.Logger != nil {
			setup.Logger.ErrorContext(ctx, "no agent engine is offered, only the scripted engine: "+setup.NoSandbox.Error())
		}
		return map[events.EngineType]engine.Factory{}, map[events.EngineType]string{}, nil
	}
	return offerOf(ctx, setup, table)
}

func offerOf(ctx context.Context, setup Setup, specs []Spec) (map[events.EngineType]engine.Factory, map[events.EngineType]string, *Pending) {
	start := setup
	start.ProbeTimeout = min(setup.probeTimeout(), setup.startupProbeTimeout())
	factories, statuses := availableOf(ctx, start, specs)
	versions := map[events.EngineType]string{}
	pending := &Pending{setup: setup, first: 30 * time.Second, last: 5 * time.Minute}
	for i, st := range statuses {
		if _, ok := factories[st.Engine]; ok && st.Installed != "" {
			versions[st.Engine] = st.Installed
		}
		if st.State == Ready {
			pending.offered = append(pending.offered, specs[i])
		} else {
			pending.specs, pending.states = append(pending.specs, specs[i]), append(pending.states, st.State)
			pending.fixes = append(pending.fixes, st.Message)
			if setup.Logger != nil {
				setup.Logger.WarnContext(ctx, "engine not offered", "engine", st.Engine, "state", st.State, "fix", st.Message)
			}
		}
	}
	return factories, versions, pending
}
