package engine

import (
	"slices"
	"testing"
	"time"
)

func TestProcessDefaults(t *testing.T) {
	p := Process{KillGrace: -1, InterruptGrace: time.Second}
	p.Defaults()
	if p.IdleTimeout != DefaultIdleTimeout || p.KillGrace != DefaultKillGrace || p.InterruptGrace != time.Second || p.CancelGrace != DefaultCancelGrace {
		t.Errorf("defaults = %+v", p)
	}
	off := Process{IdleTimeout: -1}
	off.Defaults()
	if off.IdleTimeout != -1 {
		t.Errorf("a negative idle timeout (warm processes off) became %v", off.IdleTimeout)
	}
}

func TestProcessArgv(t *testing.T) {
	p := Process{Bin: "/opt/cli", Wrap: []string{"ns", "--"}}
	a := p.Argv("-x")
	b := p.Argv("-y")
	if !slices.Equal(a, []string{"ns", "--", "/opt/cli", "-x"}) || !slices.Equal(b, []string{"ns", "--", "/opt/cli", "-y"}) {
		t.Errorf("argv = %q, %q", a, b)
	}
	if got := (&Process{Bin: "cli"}).Argv(); !slices.Equal(got, []string{"cli"}) {
		t.Errorf("argv without wrap = %q", got)
	}
	if len(p.Wrap) != 2 {
		t.Errorf("Argv changed Wrap: %q", p.Wrap)
	}
}
