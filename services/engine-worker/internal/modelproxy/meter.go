package modelproxy

import (
	"context"
	"slices"
	"sync"
	"time"

	"clopen.dev/pkg/events"
)

// Meter counts the usage of one chat's placeholder tokens (one per proxy
// the chat reaches) and attributes it to the chat's runs. A response
// belongs to the run that was open when its request arrived (see Span);
// the usage of requests made while no run was open, and whatever a
// response reports after its run's End gave up waiting for it, belongs to
// no run: it is counted in Unattributed only. A Meter is safe for
// concurrent use.
type Meter struct {
	mu           sync.Mutex
	total        events.TokenUsage
	responses    int64
	unattributed events.TokenUsage
	open         *Span
	inFlight     int
	lastUsed     time.Time
}

// Span is one run's share of a chat's Meter: the responses to the requests
// that arrived between Begin and End.
type Span struct {
	m         *Meter
	proxied   bool // a route was given out to the chat while it was open
	usage     events.TokenUsage
	responses int64
	live      map[*metered]struct{}
	drained   chan struct{} // closed when live empties, once End waits
	ended     bool
	failures  []int                  // the HTTP status of each failed model call, in order
	trace     func() context.Context // the parent of its calls' spans, when traced (Traced)
	provider  string                 // gen_ai.provider.name of its calls
}

// metered is one request's response as the meter follows it.
type metered struct {
	status int // the HTTP status answered; 0 until then
	mu     sync.Mutex
	s      *scanner // nil: a response that is not metered
	span   *Span
	billed events.TokenUsage // what span got at End while the response went on
}

// write takes the next bytes of the response body.
func (r *metered) write(p []byte) {
	r.mu.Lock()
	if r.s != nil {
		r.s.Write(p)
	}
	r.mu.Unlock()
}

// sofar is the usage the response reported up to now.
func (r *metered) sofar() events.TokenUsage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		return events.TokenUsage{}
	}
	return r.s.c.usage()
}

// failed records that the provider (or the proxy, for a provider it could
// not reach) answered the request with status, a failed model call: 429 or
// any 5xx. An agent that retries in silence says nothing else of it.
func (r *metered) failed(status int) {
	if status != 429 && status < 500 {
		return
	}
	sp := r.span
	if sp == nil {
		return
	}
	sp.m.mu.Lock()
	if !sp.ended {
		sp.failures = append(sp.failures, status)
	}
	sp.m.mu.Unlock()
}

// done ends the body and returns its usage.
func (r *metered) done() (events.TokenUsage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		return events.TokenUsage{}, false
	}
	return r.s.Done()
}

// begin starts following a request of the chat.
func (m *Meter) begin() *metered {
	r := &metered{}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight++
	m.lastUsed = time.Now()
	if sp := m.open; sp != nil {
		r.span = sp
		sp.live[r] = struct{}{}
	}
	return r
}

// finish counts a finished response's usage (u, when ok).
func (m *Meter) finish(r *metered, u events.TokenUsage, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inFlight--
	m.lastUsed = time.Now()
	if ok {
		m.total = m.total.Add(u)
		m.responses++
	}
	sp := r.span
	switch {
	case sp == nil:
		m.unattributed = m.unattributed.Add(u)
	case sp.ended:
		m.unattributed = m.unattributed.Add(minus(u, r.billed))
	default:
		sp.usage = sp.usage.Add(u)
		if ok {
			sp.responses++
		}
		delete(sp.live, r)
		if len(sp.live) == 0 && sp.drained != nil {
			close(sp.drained)
			sp.drained = nil
		}
	}
}

// minus is u less what was already counted of it, never below zero: the
// providers' running totals only grow.
func minus(u, billed events.TokenUsage) events.TokenUsage {
	return events.TokenUsage{InputTokens: max(u.InputTokens-billed.InputTokens, 0),
		OutputTokens:             max(u.OutputTokens-billed.OutputTokens, 0),
		CacheCreationInputTokens: max(u.CacheCreationInputTokens-billed.CacheCreationInputTokens, 0),
		CacheReadInputTokens:     max(u.CacheReadInputTokens-billed.CacheReadInputTokens, 0)}
}

// Begin opens the chat's next run: the requests that arrive from now until
// End are its. A chat runs one turn at a time; should another Begin come
// before End, the newer span takes the requests from then on and the older
// keeps only those it already had.
func (m *Meter) Begin() *Span {
	sp := &Span{m: m, live: map[*metered]struct{}{}}
	m.mu.Lock()
	m.open = sp
	m.lastUsed = time.Now()
	m.mu.Unlock()
	return sp
}

// routed records that the chat was given a route while a run was open.
func (m *Meter) routed() {
	m.mu.Lock()
	if m.open != nil {
		m.open.proxied = true
	}
	m.lastUsed = time.Now()
	m.mu.Unlock()
}

// End closes the run: no request that arrives from now on is its. It waits
// until every response to one that arrived while it was open has ended (a
// stream the agent was still reading when its turn ended), or until ctx
// ends; a response still going then counts with the usage it has reported
// so far, and what it reports later goes to Unattributed. ok is false when
// the chat's processes were never routed through a proxy during the run
// (an unconfined run, or one whose agent reached its model by itself):
// there is then nothing metered to report.
func (sp *Span) End(ctx context.Context) (u events.TokenUsage, ok bool) {
	m := sp.m
	m.mu.Lock()
	if m.open == sp {
		m.open = nil
	}
	var wait chan struct{}
	if len(sp.live) > 0 && !sp.ended {
		wait = make(chan struct{})
		sp.drained = wait
	}
	m.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !sp.ended {
		for r := range sp.live {
			r.billed = r.sofar()
			sp.usage = sp.usage.Add(r.billed)
		}
		sp.ended, sp.live, sp.drained = true, nil, nil
	}
	return sp.usage, sp.proxied || sp.responses > 0 || sp.usage != (events.TokenUsage{})
}

// Sofar returns the run's usage up to now: the responses that ended, plus
// what the ones still streaming have reported so far (an Anthropic stream
// reports its input when it starts and its output when it ends). ok is as
// End's. Budgets read it while the run goes on; End gives the final count.
func (sp *Span) Sofar() (u events.TokenUsage, ok bool) {
	m := sp.m
	m.mu.Lock()
	defer m.mu.Unlock()
	u = sp.usage
	for r := range sp.live {
		u = u.Add(r.sofar())
	}
	return u, sp.proxied || sp.responses > 0 || u != (events.TokenUsage{})
}

// Failures returns the HTTP statuses of the run's failed model calls (429
// and 5xx) from the nth on, in the order they were answered, and how many
// there have been in all: a caller that keeps the count asks only for the
// ones it has not seen.
func (sp *Span) Failures(n int) (statuses []int, total int) {
	m := sp.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if n < len(sp.failures) {
		statuses = slices.Clone(sp.failures[n:])
	}
	return statuses, len(sp.failures)
}

// Usage returns every token the chat's responses reported, attributed to a
// run or not, and how many responses carried usage.
func (m *Meter) Usage() (events.TokenUsage, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total, m.responses
}

// Unattributed returns the part of Usage that belongs to no run.
func (m *Meter) Unattributed() events.TokenUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unattributed
}

// idleSince reports whether the meter has no open run and no request in
// flight and was last used before t.
func (m *Meter) idleSince(t time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.open == nil && m.inFlight == 0 && m.lastUsed.Before(t)
}
