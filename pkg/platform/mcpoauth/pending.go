package mcpoauth

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Pending is an authorization started and not yet completed: the PKCE
// verifier and the server it is for, kept server-side between Start and the
// callback. The Verifier is a secret until the code is redeemed.
type Pending struct {
	Nonce    string    `json:"nonce"`
	Tenant   string    `json:"tenant"`
	Slug     string    `json:"slug"`
	Server   Server    `json:"server"`
	Verifier Secret    `json:"verifier"`
	Expires  time.Time `json:"expires"`
}

// LogValue describes p without its verifier or the client secret.
func (p Pending) LogValue() slog.Value {
	return slog.GroupValue(slog.String("nonce", p.Nonce), slog.String("tenant", p.Tenant),
		slog.String("slug", p.Slug), slog.Any("server", p.Server), slog.Time("expires", p.Expires))
}

// ErrNoPending is what a PendingStore's Take returns for a nonce it does
// not hold (never stored, already taken or dropped after expiry).
var ErrNoPending = errors.New("no pending authorization")

// PendingStore keeps pending authorizations. Take must be atomic: of two
// concurrent Takes of one nonce, one gets the record and the other
// ErrNoPending, so a callback cannot be replayed. Implementations must be
// safe for concurrent use and may drop records past Expires.
type PendingStore interface {
	Put(ctx context.Context, p Pending) error
	Take(ctx context.Context, nonce string) (Pending, error)
}

// MemPending is a PendingStore in memory, for tests and single-process use.
// Its zero value is ready.
type MemPending struct {
	mu sync.Mutex
	m  map[string]Pending
}

var _ PendingStore = (*MemPending)(nil)

// Put stores p under its nonce and drops expired records.
func (s *MemPending) Put(_ context.Context, p Pending) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]Pending)
	}
	now := time.Now()
	for k, old := range s.m {
		if now.After(old.Expires) {
			delete(s.m, k)
		}
	}
	s.m[p.Nonce] = p
	return nil
}

// Take removes and returns the record of nonce.
func (s *MemPending) Take(_ context.Context, nonce string) (Pending, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.m[nonce]
	if !ok {
		return Pending{}, ErrNoPending
	}
	delete(s.m, nonce)
	return p, nil
}

// Len is the number of records held.
func (s *MemPending) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
