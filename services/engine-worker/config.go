package worker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/bytesize"
)

// ConfigFromEnv reads a standalone worker's configuration:
// CLOPEN_WORKER_ID, CLOPEN_WORKER_CAPACITY, CLOPEN_WORKSPACES, CLOPEN_ENGINE_CONFIG,
// CLOPEN_SNAPSHOT_CACHE, CLOPEN_WORKSPACE_QUOTA (bytes, or with KiB, MiB, GiB),
// CLOPEN_COALESCE (a duration, 0 to publish every delta), CLOPEN_SCENARIOS,
// CLOPEN_STREAM_REPLICAS (of the buckets it declares), CLOPEN_METRICS_TENANT
// (off leaves the tenant out of the GenAI metrics), CLOPEN_GIT_ALLOW_LOCAL (on
// admits local repositories), CLOPEN_GIT_CA_FILE, CLOPEN_MCP_BRIDGE_URL, and
// the bus token keys (CLOPEN_CALLER_PUBKEY, and CLOPEN_MCP_KEY with a bridge).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := DefaultConfig()
	if v := getenv("CLOPEN_WORKER_ID"); v != "" {
		cfg.ID = v
	}
	if v := getenv("CLOPEN_WORKER_CAPACITY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("CLOPEN_WORKER_CAPACITY=%q: want a positive number", v)
		}
		cfg.Capacity = n
	}
	if v := getenv("CLOPEN_WORKSPACES"); v != "" {
		cfg.Workspaces = v
	}
	cfg.EngineConfig = getenv("CLOPEN_ENGINE_CONFIG")
	cfg.SnapshotCache = getenv("CLOPEN_SNAPSHOT_CACHE")
	if v := getenv("CLOPEN_WORKSPACE_QUOTA"); v != "" {
		n, err := bytesize.Parse(v)
		if err != nil {
			return cfg, fmt.Errorf("CLOPEN_WORKSPACE_QUOTA=%q: %w", v, err)
		}
		cfg.WorkspaceQuota = n
	}
	if v := getenv("CLOPEN_COALESCE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return cfg, fmt.Errorf("CLOPEN_COALESCE=%q: want a duration such as 30ms", v)
		}
		cfg.Coalesce = d
	}
	if v := getenv("CLOPEN_STREAM_REPLICAS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5 {
			return cfg, fmt.Errorf("CLOPEN_STREAM_REPLICAS=%q: want 1 to 5", v)
		}
		cfg.Replicas = n
	}
	cfg.ScenarioDir = getenv("CLOPEN_SCENARIOS")
	metricsTenant, err := onOff(getenv, "CLOPEN_METRICS_TENANT", true)
	if err != nil {
		return cfg, err
	}
	cfg.MetricsWithoutTenant = !metricsTenant
	if cfg.GitAllowLocal, err = onOff(getenv, "CLOPEN_GIT_ALLOW_LOCAL", false); err != nil {
		return cfg, err
	}
	cfg.GitCAFile = getenv("CLOPEN_GIT_CA_FILE")
	cfg.MCPBridgeURL = getenv("CLOPEN_MCP_BRIDGE_URL")
	keys, err := bustoken.FromEnv(getenv)
	if err != nil {
		return cfg, err
	}
	cfg.Tokens = keys.Only(TokenKeys)
	return cfg, nil
}

// Run builds a worker from cfg and d and serves until ctx ends.
func Run(ctx context.Context, cfg Config, d Deps) error {
	w, err := New(cfg, d)
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// onOff reads a switch variable: on or off, def when unset.
func onOff(getenv func(string) string, name string, def bool) (bool, error) {
	switch v := getenv(name); v {
	case "":
		return def, nil
	case "on":
		return true, nil
	case "off":
		return false, nil
	default:
		return def, fmt.Errorf("%s=%q: want on or off", name, v)
	}
}
