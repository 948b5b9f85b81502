// Package health keeps a service's readiness checks and serves them over HTTP:
// /healthz answers while the process runs, /readyz only while every check
// passes.
package health

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Check returns nil when the part it watches can serve.
type Check func(ctx context.Context) error

// Registry is a set of named checks. It is safe for concurrent use; services
// add their checks as they start.
type Registry struct {
	mu     sync.Mutex
	checks map[string]Check
}

// New returns an empty registry.
func New() *Registry { return &Registry{checks: map[string]Check{}} }

// Add registers (or replaces) the check called name.
func (r *Registry) Add(name string, c Check) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks[name] = c
}

// Remove drops the check called name, e.g. when its service stops.
func (r *Registry) Remove(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.checks, name)
}

// Result is the outcome of one check.
type Result struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Run evaluates every check (each bounded by two seconds) and reports whether
// all passed. A registry with no checks is not ready: nothing has started.
func (r *Registry) Run(ctx context.Context) (bool, []Result) {
	r.mu.Lock()
	names := make([]string, 0, len(r.checks))
	for n := range r.checks {
		names = append(names, n)
	}
	checks := make([]Check, len(names))
	sort.Strings(names)
	for i, n := range names {
		checks[i] = r.checks[n]
	}
	r.mu.Unlock()

	results := make([]Result, len(names))
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			results[i] = Result{Name: names[i], OK: true}
			if err := checks[i](cctx); err != nil {
				results[i] = Result{Name: names[i], Error: err.Error()}
			}
		}()
	}
	wg.Wait()
	ok := len(results) > 0
	for _, res := range results {
		ok = ok && res.OK
	}
	return ok, results
}

// Handler serves GET /healthz (liveness) and GET /readyz (readiness, 503
// with the failing checks named when not ready).
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, req *http.Request) {
		ok, results := r.Run(req.Context())
		status, code := "ready", http.StatusOK
		if !ok {
			status, code = "not ready", http.StatusServiceUnavailable
		}
		writeJSON(w, code, map[string]any{"status": status, "checks": results})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
