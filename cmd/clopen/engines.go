package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/engines"
)

// runEngines is `clopen engines install <engine>` and `clopen engines doctor`.
func runEngines(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	usage := "usage: clopen engines install <engine> | clopen engines doctor; engines: " + engineNames()
	if wantsHelp(args) {
		fmt.Fprintln(stdout, usage+"\n\ninstall puts the engine's pinned npm package under the engines dir "+
			"($CLOPEN_ENGINES_DIR, else <data dir>/engines; npm's cache in $CLOPEN_NPM_CACHE);\n"+
			"doctor says which engines are ready and what to do about the others")
		return nil
	}
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	dir, err := dataDir(getenv)
	if err != nil {
		return err
	}
	setup := engines.SetupFromEnv(dir, getenv, nil)
	switch args[0] {
	case "install":
		if len(args) != 2 {
			return fmt.Errorf("%s", usage)
		}
		spec, ok := engines.Lookup(events.EngineType(args[1]))
		if !ok {
			return fmt.Errorf("unknown engine %q; engines: %s", args[1], engineNames())
		}
		if v, err := spec.InstalledVersion(ctx, setup.Root()); err == nil && v == spec.Version {
			fmt.Fprintf(stdout, "%s %s is already installed in %s\n", spec.Type, spec.Version, spec.Dir(setup.Root()))
			return nil
		}
		fmt.Fprintf(stdout, "installing %s %s into %s\n", spec.Type, spec.Version, spec.Dir(setup.Root()))
		if _, err := spec.Install(ctx, setup.Root(), engines.NPMCache(getenv), stdout); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s installed\n", spec.Type, spec.Version)
		return nil
	case "doctor":
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ENGINE\tSTATE\tINSTALLED\tREQUIRED\tNEXT STEP")
		// The scripted engine is part of every worker, not installed.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", events.EngineScripted, engines.Ready, "built-in", "-",
			"built in and always offered: models scripted/<scenario>")
		for _, st := range engines.Diagnose(ctx, setup) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Engine, st.State, orDash(st.Installed), st.Required, st.Message)
		}
		return tw.Flush()
	}
	return fmt.Errorf("%s", usage)
}

func engineNames() string {
	var names []string
	for _, s := range engines.All() {
		names = append(names, string(s.Type))
	}
	return strings.Join(names, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
