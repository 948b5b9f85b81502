package events

import "fmt"

// Every vocabulary of the contract (EngineType, StopReason, RunStateName…) is
// a string type with a Valid method. Decoding and encoding check values
// through the same pair of helpers, so that whatever this package encodes, it
// also decodes.

// enumValue is a string vocabulary with a Valid method.
type enumValue interface {
	~string
	Valid() bool
}

// readEnum reads key as a value of T. An empty value is an error when
// required and "" otherwise.
func readEnum[T enumValue](d *dec, key string, required bool) T {
	s := T(d.str(key))
	switch {
	case d.failed():
		return ""
	case s == "":
		if required {
			d.failf(key, "missing")
		}
		return ""
	case !s.Valid():
		d.failf(key, "invalid value %q", string(s))
		return ""
	}
	return s
}

// checkEnum is readEnum's twin on the encoding side, so that whatever this
// package encodes, it also decodes.
func checkEnum[T enumValue](field string, v T, required bool) error {
	switch {
	case v == "" && required:
		return fmt.Errorf("%s: missing", field)
	case v != "" && !v.Valid():
		return fmt.Errorf("%s: invalid value %q", field, string(v))
	}
	return nil
}

func oneOf[T comparable](v T, set []T) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}
