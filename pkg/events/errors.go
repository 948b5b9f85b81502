package events

import "errors"

// DecodeError is the error every decoder in this package returns for input it
// refuses: malformed JSON, a missing discriminator, a field of the wrong JSON
// type, or an enum value outside its vocabulary. It reads
// "decode <Type>: <Field>: <Err>", for example
// "decode assistant: content[1].input: want a JSON object".
type DecodeError struct {
	// Type names what was being decoded: the discriminator of the top-level
	// value ("assistant", "tool_use", "chat:partial"), "envelope", or a
	// generic name ("output", "block", "chat event") when the discriminator
	// itself could not be read.
	Type string
	// Field is the path from the top-level value to the offending field, in
	// wire names with indexes: "content[1].input", "output.usage.inputTokens".
	// It is empty when the value as a whole is at fault.
	Field string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *DecodeError) Error() string {
	msg := "decode " + e.Type + ": "
	if e.Field != "" {
		msg += e.Field + ": "
	}
	if e.Err == nil {
		return msg + "invalid"
	}
	return msg + e.Err.Error()
}

// Unwrap returns the cause, so errors.Is and errors.As see through a
// DecodeError (to a *json.SyntaxError, for instance).
func (e *DecodeError) Unwrap() error { return e.Err }

// withType returns err with its DecodeError.Type set to typ.
func withType(err error, typ string) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return &DecodeError{Type: typ, Field: de.Field, Err: de.Err}
	}
	return &DecodeError{Type: typ, Err: err}
}

// ErrorKind classifies a failure that travels on the bus (in run_state,
// chat:error and chat:run-state) so that every service reacts to it the same
// way. The vocabulary is append-only: a kind, once published, keeps its name
// and meaning.
type ErrorKind string

// The error kinds.
const (
	KindAuth             ErrorKind = "auth"              // credentials missing, expired or refused
	KindRateLimited      ErrorKind = "rate_limited"      // the provider throttled the account
	KindModelUnavailable ErrorKind = "model_unavailable" // the model is unknown or not served
	KindProvider         ErrorKind = "provider"          // the provider failed (5xx, overload)
	KindCrashed          ErrorKind = "crashed"           // the agent process died
	KindTimeout          ErrorKind = "timeout"           // a deadline passed
	KindInvalidRequest   ErrorKind = "invalid_request"   // the request itself is wrong
	KindNotInstalled     ErrorKind = "not_installed"     // the engine is not installed on the worker
	KindNeedsAccount     ErrorKind = "needs_account"     // no account is configured for the engine
	KindInternal         ErrorKind = "internal"          // a Clopen bug
	KindCancelled        ErrorKind = "cancelled"         // the user cancelled the run
	KindInterrupted      ErrorKind = "interrupted"       // the user interrupted the turn
	KindBudgetExhausted  ErrorKind = "budget_exhausted"  // the tenant's budget for the period is spent
)

var errorKinds = []ErrorKind{
	KindAuth, KindRateLimited, KindModelUnavailable, KindProvider, KindCrashed, KindTimeout,
	KindInvalidRequest, KindNotInstalled, KindNeedsAccount, KindInternal, KindCancelled, KindInterrupted, KindBudgetExhausted,
}

// ErrorKinds returns every error kind, in declaration order. The slice is a
// copy.
func ErrorKinds() []ErrorKind { return append([]ErrorKind(nil), errorKinds...) }

// Valid reports whether k is one of the published error kinds.
func (k ErrorKind) Valid() bool { return oneOf(k, errorKinds) }
