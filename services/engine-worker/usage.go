package worker

import (
	"cmp"
	"context"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

// DefaultUsageEvery is Config.UsageEvery's default: a turn past its
// tenant's budget is stopped within about this much of the model's answer
// that spent it, plus the time to route and commit the report.
const DefaultUsageEvery = time.Second

// reportUsage publishes, every Config.UsageEvery while it changes, what the
// model proxy has counted for run r so far (span.Sofar), priced at the
// model's list price, as a usage event from the proxy. The returned stop
// ends it and waits for it; the terminal state then carries the final
// count (meteredUsage).
func (w *Worker) reportUsage(ctx context.Context, r *run, span *modelproxy.Span, silentRetries bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(cmp.Or(w.cfg.UsageEvery, DefaultUsageEvery))
		defer tick.Stop()
		var last events.TokenUsage
		failed := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if silentRetries && !w.noticeFailures(r, span, &failed) {
				return
			}
			u, ok := span.Sofar()
			if !ok || u == last {
				continue
			}
			last = u
			if err := r.pub.emit(events.RunUsage{Source: events.UsageFromProxy, Usage: u, CostUSD: priced(u, r.price)}); err != nil {
				return // fenced or ended: the terminal state has the count
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// noticeFailures tells the run's session of the model calls the provider
// failed since the last look (failed counts those told); false once the
// run may no longer publish. An agent retries them, or the turn fails with
// the last one: either way the user learns of it as it happens, not a
// minute later.
func (w *Worker) noticeFailures(r *run, span *modelproxy.Span, failed *int) bool {
	statuses, total := span.Failures(*failed)
	for i, status := range statuses {
		n := engine.RetryNotice(r.job.SessionID, string(r.job.Engine), status, *failed+i+1)
		if err := r.pub.emit(n); err != nil {
			return false
		}
	}
	*failed = total
	return true
}

// priced is what u costs at price (dollars per million tokens); 0 when the
// price is unknown.
func priced(u events.TokenUsage, price *events.ModelCost) float64 {
	if price == nil {
		return 0
	}
	return (float64(u.InputTokens)*price.Input + float64(u.OutputTokens)*price.Output +
		float64(u.CacheReadInputTokens)*price.CacheRead + float64(u.CacheCreationInputTokens)*price.CacheWrite) / 1e6
}
