package worker

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/platform/bustoken"
)

// ConfigFromEnv reads a standalone worker's configuration:
// CLOPEN_WORKER_ID, CLOPEN_WORKER_CAPACITY, CLOPEN_WORKSPACES, CLOPEN_ENGINE_CONFIG,
// CLOPEN_SNAPSHOT_CACHE, CLOPEN_WORKSPACE_QUOTA (bytes, or with KiB, MiB, GiB),
// CLOPEN_COALESCE (a duration, 0 to publish every delta), CLOPEN_SCENARIOS,
// CLOPEN_STREAM_REPLICAS (of the buckets it declares), CLOPEN_METRICS_TENANT
// (off leaves the tenant out of the GenAI metrics), and the bus token keys
// (CLOPEN_CALLER_PUBKEY).
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
		n, err := parseBytes(v)
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
	switch v := getenv("CLOPEN_METRICS_TENANT"); v {
	case "", "on":
	case "off":
		cfg.MetricsWithoutTenant = true
	default:
		return cfg, fmt.Errorf("CLOPEN_METRICS_TENANT=%q: want on or off", v)
	}
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

// parseBytes reads a size: a number of bytes, or one with a KiB, MiB or
// GiB suffix.
func parseBytes(v string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			v, mult = strings.TrimSpace(n), m
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a size such as 2GiB")
	}
	return n * mult, nil
}
