package bridge

import (
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/platform/egressproxy"
)

// TestStdioFromEnv: the stdio servers' variables are read into the
// config, and a bad value is an error naming its variable.
func TestStdioFromEnv(t *testing.T) {
	env := map[string]string{EnvStdioDir: "/var/lib/clopen/mcp", EnvStdioReadOnly: "/opt/mcp, /srv/tools",
		egressproxy.EnvAllowMCPStdio: "api.github.com, *.googleapis.com:8443", EnvIdle: "2m"}
	c := DefaultConfig()
	if err := c.StdioFromEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	want := []egressproxy.Rule{{Host: "api.github.com"}, {Host: "*.googleapis.com", Port: 8443}}
	if c.StdioDir != "/var/lib/clopen/mcp" || strings.Join(c.StdioReadOnly, ",") != "/opt/mcp,/srv/tools" ||
		len(c.StdioAllow) != 2 || c.StdioAllow[0] != want[0] || c.StdioAllow[1] != want[1] || c.IdleTimeout != 2*time.Minute {
		t.Errorf("config = %+v", c)
	}
	for name, bad := range map[string]string{EnvStdioReadOnly: "relative/dir", egressproxy.EnvAllowMCPStdio: "https://api.github.com",
		EnvIdle: "soon"} {
		err := (&Config{}).StdioFromEnv(func(k string) string {
			if k == name {
				return bad
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v, want an error naming the variable", name, bad, err)
		}
	}
	off := DefaultConfig()
	_ = off.StdioFromEnv(func(k string) string { return map[string]string{EnvStdioDir: "off"}[k] })
	if off.StdioDir != "" || off.StdioAllow != nil {
		t.Errorf("%s=off left %+v", EnvStdioDir, off)
	}
}
