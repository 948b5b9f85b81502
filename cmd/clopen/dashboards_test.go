package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
	"clopen.dev/services/streammgr"
)

// Every query of every shipped dashboard returns data from a running
// Clopen: `clopen dev` serves a few turns (one of them failing, one
// refused key, one WebSocket open) while a real Prometheus scrapes its
// metrics, and then each panel's query is evaluated by that Prometheus. A
// query naming a metric nothing exports, or a label nothing sets, returns
// no series and fails the test.
func TestDashboardQueriesHaveData(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("prometheus is not installed (Debian package prometheus); CI installs it")
		}
		t.Skip("prometheus is not installed (Debian package prometheus)")
	}
	dashboards := readDashboards(t)

	dir := t.TempDir()
	httpAddr, adminAddr, promAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	env := map[string]string{
		"CLOPEN_DATA": dir, "DATABASE_URL": pgtest.NewURL(t), "CLOPEN_HTTP_ADDR": httpAddr,
		"CLOPEN_ADMIN_ADDR": adminAddr, "CLOPEN_NATS_PORT": "-1", "CLOPEN_ENGINES_DIR": filepath.Join(dir, "engines"),
		"CLOPEN_LOG_LEVEL": "error",
	}
	ctx, stop := context.WithCancel(context.Background())
	var out syncBuffer
	devErr := make(chan error, 1)
	go func() { devErr <- runDev(ctx, nil, func(k string) string { return env[k] }, &out, &out) }()
	t.Cleanup(func() {
		stop()
		if err := <-devErr; err != nil {
			t.Errorf("clopen dev: %v", err)
		}
	})
	waitFor(t, 60*time.Second, "clopen dev to start", func() bool { return strings.Contains(out.String(), "Clopen is running") })

	startPrometheus(t, prom, promAddr, adminAddr)
	waitFor(t, 30*time.Second, "Prometheus to scrape Clopen", func() bool {
		return len(promQuery(t, promAddr, `up{job="clopen"} == 1`)) > 0
	})

	key, err := os.ReadFile(filepath.Join(dir, gateway.DevKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New("http://"+httpAddr, strings.TrimSpace(string(key)))
	driveTraffic(t, c, "http://"+httpAddr)
	spendBudget(t, env["DATABASE_URL"], c)
	// Two scrapes after the last turn, so every rate has two samples with it.
	time.Sleep(3 * time.Second)

	// What the traffic must have left, beyond a series existing.
	for _, expr := range []string{
		`sum(clopen_gateway_auth_rejected_total{reason="invalid"}) >= 1`,
		`sum(clopen_gateway_ws_connections) >= 1`,
		`count(http_server_request_duration_seconds_count{http_route="/v1/sessions/{id}/messages"}) >= 1`,
		`sum(gen_ai_client_operation_duration_seconds_count{gen_ai_agent_name="scripted"}) >= 3`,
		`sum(gen_ai_client_operation_duration_seconds_count{error_type!=""}) >= 1`,
		`sum(gen_ai_client_token_usage_sum{gen_ai_token_type="output"}) > 0`,
		`count(clopen_streammgr_jobs_backlog) >= 9`, // every engine type, zero or not
		`count(db_client_connection_count{db_client_connection_pool_name="clopen"}) == 2`,
		`sum(clopen_budget_exhausted_total{action="refused",unit="tokens",period="day"}) >= 1`,
		// The shipped alert rule (deploy/prometheus/alerts.yml) fires on it.
		`ALERTS{alertname="ClopenTenantBudgetSpent",alertstate="firing"}`,
	} {
		if len(promQuery(t, promAddr, expr)) == 0 {
			t.Errorf("want %s", expr)
		}
	}

	queries := 0
	for name, d := range dashboards {
		for _, p := range d.Panels {
			if p.Datasource.UID != "${datasource}" {
				t.Errorf("%s: panel %q names datasource %q, not the dashboard's variable ${datasource}", name, p.Title, p.Datasource.UID)
			}
			for _, target := range p.Targets {
				queries++
				if res := promQuery(t, promAddr, target.Expr); len(res) == 0 {
					t.Errorf("%s: panel %q: %s returns no series", name, p.Title, target.Expr)
				}
			}
		}
	}
	if queries < 20 {
		t.Errorf("only %d queries in %d dashboards", queries, len(dashboards))
	}
	t.Logf("%d queries in %d dashboards", queries, len(dashboards))
}

// driveTraffic makes what the dashboards show: two finished turns and a
// failed one in the scripted engine, a request with a key that does not
// exist, and a WebSocket that stays open.
func driveTraffic(t *testing.T, c *client.Client, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	projects, err := c.Projects(ctx)
	if err != nil || len(projects) == 0 {
		t.Fatalf("projects = %v, %v", projects, err)
	}
	ws, err := c.Dial(ctx)
	if err != nil {
		t.Fatalf("websocket: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	for _, scenario := range []string{"hello", "tools", "error"} {
		s, err := c.CreateSession(ctx, projects[0].ID, api.CreateSession{Engine: events.EngineScripted, Model: "scripted/" + scenario})
		if err != nil {
			t.Fatal(err)
		}
		reply, err := c.SendMessage(ctx, s.ID, api.SendMessage{Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "run "+scenario+" to end", func() bool {
			r, err := c.Run(ctx, reply.RunID)
			return err == nil && r.State.Terminal()
		})
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/me", nil)
	req.Header.Set("Authorization", "Bearer clp_not_a_key_anyone_has_0000000000000000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request with an unknown key = %d, want 401", resp.StatusCode)
	}
}

// spendBudget gives the dev tenant a budget of no tokens a day: its next
// send is refused (402 budget_exhausted), which the budget metric counts.
func spendBudget(t *testing.T, dbURL string, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := pgdb.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	me, err := c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := streammgr.SetTenantBudget(ctx, db, me.Tenant.ID, events.Budget{Unit: events.BudgetTokens, Period: events.PeriodDay},
		false, audit.Operator); err != nil {
		t.Fatal(err)
	}
	projects, err := c.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.CreateSession(ctx, projects[0].ID, api.CreateSession{Engine: events.EngineScripted})
	if err != nil {
		t.Fatal(err)
	}
	var apiErr *events.APIError
	if _, err := c.SendMessage(ctx, s.ID, api.SendMessage{Text: "over budget"}); !errors.As(err, &apiErr) || apiErr.Code != "budget_exhausted" {
		t.Fatalf("a send with a budget of nothing = %v, want budget_exhausted", err)
	}
}

type dashboard struct {
	Panels []struct {
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	files, err := filepath.Glob("../../deploy/grafana/dashboards/*.json")
	if err != nil || len(files) < 4 {
		t.Fatalf("dashboards = %v, %v; want overview, usage, engines and infrastructure", files, err)
	}
	out := map[string]dashboard{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = d
	}
	return out
}

// startPrometheus runs a real Prometheus that scrapes target every second
// into a scratch store.
func startPrometheus(t *testing.T, bin, addr, target string) {
	t.Helper()
	dir := t.TempDir()
	rules, err := filepath.Abs("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [%q]\nscrape_configs:\n  - job_name: clopen\n    static_configs:\n      - targets: [%q]\n",
		rules, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus:\n%s", log.String())
		}
	})
	waitFor(t, 30*time.Second, "Prometheus to be ready", func() bool {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// promQuery evaluates expr now and returns its series.
func promQuery(t *testing.T, addr, expr string) []json.RawMessage {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/query?" + url.Values{"query": {expr}}.Encode())
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %s %s (%v)", expr, r.Status, r.Error, err)
	}
	return r.Data.Result
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// syncBuffer is a strings.Builder safe for the writers of two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
