package events

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// MaxTokenLen is the longest subject or KV-key token the builders accept. UUIDs
// (36 bytes) and engine names fit with room to spare; anything longer is almost
// certainly not an identifier.
const MaxTokenLen = 128

// ErrBadToken is wrapped by every error a subject or key builder returns.
var ErrBadToken = errors.New("bad subject token")

// Stream, bucket and subject-prefix names. The service that owns each one
// declares it (see the owner's streams.go); everything else only refers to it.
const (
	StreamEvents = "EVENTS" // ev.<tenant>.<run>: every engine event of a run
	StreamChat   = "CHAT"   // chat.<tenant>.<session>: routed chat events, the resume buffer
	StreamJobs   = "JOBS"   // job.<engine>: turns waiting for a worker

	BucketRunOwner = "run_owner" // run -> {worker, epoch}; revision is the epoch
	BucketRunCtl   = "run_ctl"   // run -> durable cancel/interrupt flag
	BucketWorkers  = "workers"   // worker -> heartbeat
	// BucketSnapshots is the object store of the chat sessions' snapshots
	// (workspaces and engine session files), every object under its
	// tenant's prefix; the workers own it.
	BucketSnapshots = "snapshots"
	// BucketArtifactRev maps a tenant to its artifact revision (decimal); the
	// artifacts service owns it and bumps it on every artifact change.
	BucketArtifactRev = "artifact_rev"

	SubjectEventsAll = "ev.>"
	SubjectChatAll   = "chat.>"
	SubjectJobsAll   = "job.>"
)

// Control verbs addressed to the worker that owns a run.
const (
	VerbCancel    = "cancel"
	VerbInterrupt = "interrupt"
	VerbAnswer    = "answer"
	// The MCP bridge's requests for one run's tools (RunToolRequest): ask
	// parks the run on a question until the user answers it, notify tells
	// the session's members something.
	VerbAsk    = "ask"
	VerbNotify = "notify"
)

// ValidToken reports whether s can be used as one token of a NATS subject or
// as a KV key: non-empty, at most MaxTokenLen bytes, printable ASCII without
// whitespace, dots or the wildcards * and >.
func ValidToken(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty", ErrBadToken)
	case len(s) > MaxTokenLen:
		return fmt.Errorf("%w: %d bytes, limit %d", ErrBadToken, len(s), MaxTokenLen)
	}
	for i, r := range s {
		switch {
		case r == '.':
			return fmt.Errorf("%w: %q has a dot at %d", ErrBadToken, s, i)
		case r == '*' || r == '>':
			return fmt.Errorf("%w: %q has a wildcard at %d", ErrBadToken, s, i)
		case unicode.IsSpace(r):
			return fmt.Errorf("%w: %q has whitespace at %d", ErrBadToken, s, i)
		case r > unicode.MaxASCII || !unicode.IsPrint(r):
			return fmt.Errorf("%w: %q has a non-printable or non-ASCII byte at %d", ErrBadToken, s, i)
		case r == '$' && i == 0:
			return fmt.Errorf("%w: %q starts with the reserved $", ErrBadToken, s)
		}
	}
	return nil
}

func join(prefix string, tokens ...string) (string, error) {
	var b strings.Builder
	b.WriteString(prefix)
	for _, t := range tokens {
		if err := ValidToken(t); err != nil {
			return "", fmt.Errorf("subject %s: %w", prefix, err)
		}
		b.WriteByte('.')
		b.WriteString(t)
	}
	return b.String(), nil
}

// EventsSubject is the subject a run's engine events are published on:
// ev.<tenant>.<run>.
func EventsSubject(tenant, run string) (string, error) { return join("ev", tenant, run) }

// ChatSubject is the subject a chat session's routed events are published on:
// chat.<tenant>.<session>.
func ChatSubject(tenant, session string) (string, error) { return join("chat", tenant, session) }

// NotifySubject carries events for every member of a project (a turn
// finished, a run waits for input) on core NATS, not persisted:
// notify.<tenant>.<project>.
func NotifySubject(tenant, project string) (string, error) { return join("notify", tenant, project) }

// JobSubject is the work-queue subject for turns that need the given engine:
// job.<engine>.
func JobSubject(engine string) (string, error) { return join("job", engine) }

// ControlSubject addresses one verb to the worker that owns run:
// ctl.run.<run>.<verb>.
func ControlSubject(run, verb string) (string, error) { return join("ctl.run", run, verb) }

// ControlWildcard is what the owning worker subscribes to while it holds run:
// ctl.run.<run>.>.
func ControlWildcard(run string) (string, error) {
	s, err := join("ctl.run", run)
	if err != nil {
		return "", err
	}
	return s + ".>", nil
}

// ServiceSubject names a request/reply endpoint of a service:
// svc.<service>.<op>, where op may have several dot-separated tokens
// ("sessions.create").
func ServiceSubject(service, op string) (string, error) {
	return join("svc", append([]string{service}, strings.Split(op, ".")...)...)
}

// ParseEventsSubject splits ev.<tenant>.<run> into its tokens.
func ParseEventsSubject(subject string) (tenant, run string, err error) {
	return parse2(subject, "ev")
}

// ParseChatSubject splits chat.<tenant>.<session> into its tokens.
func ParseChatSubject(subject string) (tenant, session string, err error) {
	return parse2(subject, "chat")
}

func parse2(subject, prefix string) (string, string, error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 3 || parts[0] != prefix {
		return "", "", fmt.Errorf("%w: %q is not %s.<a>.<b>", ErrBadToken, subject, prefix)
	}
	for _, p := range parts[1:] {
		if err := ValidToken(p); err != nil {
			return "", "", err
		}
	}
	return parts[1], parts[2], nil
}

// KVKey validates a key for one of the buckets; keys are single tokens.
func KVKey(key string) (string, error) {
	if err := ValidToken(key); err != nil {
		return "", fmt.Errorf("kv key: %w", err)
	}
	return key, nil
}
