// Package natsx connects a service to NATS and JetStream with the options
// every Clopen service shares, and waits for streams declared by their owners.
package natsx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Connect dials url with reconnects forever (a service outlives broker
// restarts) and logs connection state changes and the errors the server
// reports asynchronously (a permissions violation: the service used a
// subject its identity is not granted). opts add to these (busauth's
// identity).
func Connect(url, name string, logger *slog.Logger, opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(url, append([]nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				logger.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { logger.Info("nats reconnected", "url", c.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			args := []any{"err", err}
			if sub != nil {
				args = append(args, "subject", sub.Subject)
			}
			logger.Error("nats", args...)
		}),
	}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect nats %s: %w", url, err)
	}
	return nc, nil
}

// WaitStream returns the named stream once it exists, retrying until ctx ends.
// Services that consume a stream declared by another service use it at start.
func WaitStream(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	var s jetstream.Stream
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		s, err = js.Stream(ctx, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("wait for stream %s: %w", name, err)
	}
	return s, nil
}

// WaitKV returns the named bucket once it exists, retrying until ctx ends.
func WaitKV(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		kv, err = js.KeyValue(ctx, bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("wait for bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// attemptTimeout bounds one look-up, so that a request JetStream never
// answers (its leader is gone) is given up and asked again.
var attemptTimeout = 5 * time.Second

func retry(ctx context.Context, op func(context.Context) error) error {
	b := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(50*time.Millisecond),
		backoff.WithMaxInterval(time.Second),
		backoff.WithMaxElapsedTime(0),
	), ctx)
	return backoff.Retry(func() error {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(actx)
		cancel()
		if err != nil && !transient(ctx, err) {
			return backoff.Permanent(err)
		}
		return err
	}, b)
}

// transient reports whether a failed look-up is worth another try: the
// stream or bucket is not declared yet, or JetStream did not answer in time —
// a cluster electing leaders can take longer than one request's timeout,
// which then ends that request (not ctx) with a deadline error.
func transient(ctx context.Context, err error) bool {
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrBucketNotFound),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrTimeout):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		return ctx.Err() == nil
	}
	return false
}

// MinServerVersion is the oldest NATS server Clopen runs on: the EVENTS
// consumer is pinned to one streammgr through a priority group, which came
// with 2.11.
const MinServerVersion = "2.11.0"

// RequireServer waits until nc is connected (or ctx ends) and refuses a
// server older than MinServerVersion, with a message that names both
// versions, instead of the JetStream error a missing feature gives later
// ("priority group is not supported for this consumer").
func RequireServer(ctx context.Context, nc *nats.Conn) error {
	for !nc.IsConnected() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats: not connected, so the server's version is unknown: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	have := nc.ConnectedServerVersion()
	if !versionAtLeast(have, MinServerVersion) {
		return fmt.Errorf("the NATS server at %s is version %s; Clopen needs %s or newer (JetStream priority groups)",
			nc.ConnectedUrlRedacted(), have, MinServerVersion)
	}
	return nil
}

// versionAtLeast compares dotted versions numerically ("2.9.10" < "2.11.0");
// a pre-release or build suffix of a part is ignored, and a part that is
// not a number counts as 0.
func versionAtLeast(have, want string) bool {
	h, w := strings.Split(have, "."), strings.Split(want, ".")
	for i := range max(len(h), len(w)) {
		a, b := versionPart(h, i), versionPart(w, i)
		if a != b {
			return a > b
		}
	}
	return true
}

func versionPart(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	p := parts[i]
	if j := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
		p = p[:j]
	}
	n, _ := strconv.Atoi(p)
	return n
}
