package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// dec reads one JSON object field by field. Every decoder in the package is
// written against it so that each refusal names its path. Keys match exactly
// (encoding/json's struct decoding would also accept "TEXT" for "text"), and
// keys a decoder does not ask for are ignored: that is the forward
// compatibility the append-only contract relies on.
//
// The first error wins: it is stored in *errp, shared by a dec and every
// child it opens, and later reads become no-ops that return zero values.
type dec struct {
	path string                     // from the top-level value, "" at the root
	raw  json.RawMessage            // the object's own bytes
	m    map[string]json.RawMessage // its fields; nil after an error
	errp *error
}

// openObject parses raw as a JSON object found at path.
func openObject(raw []byte, path string, errp *error) *dec {
	d := &dec{path: path, errp: errp}
	if d.failed() {
		return d
	}
	if k := kind(raw); k == "null" || k == "nothing" {
		d.fail("", errors.New("want a JSON object"))
		return d
	}
	if err := json.Unmarshal(raw, &d.m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			err = errors.New("want a JSON object")
		}
		d.fail("", err)
		d.m = nil
		return d
	}
	d.raw = raw
	return d
}

// kind names the JSON kind of a valid raw value by its first byte.
func kind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func joinPath(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	case key[0] == '[':
		return path + key
	}
	return path + "." + key
}

func index(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

func (d *dec) failed() bool { return *d.errp != nil }

// fail records err against key (relative to d) unless an error is recorded.
func (d *dec) fail(key string, err error) {
	if *d.errp == nil {
		*d.errp = &DecodeError{Field: joinPath(d.path, key), Err: err}
	}
}

func (d *dec) failf(key, format string, args ...any) { d.fail(key, fmt.Errorf(format, args...)) }

// get returns key's raw value, or nil when it is missing or null.
func (d *dec) get(key string) json.RawMessage {
	if d.failed() {
		return nil
	}
	raw, ok := d.m[key]
	if !ok || kind(raw) == "null" {
		return nil
	}
	return raw
}

// typed returns key's raw value if it has JSON kind k, nil when missing or
// null, and records an error otherwise.
func (d *dec) typed(key, k, want string) json.RawMessage {
	raw := d.get(key)
	if raw != nil && kind(raw) != k {
		d.failf(key, "want %s", want)
		return nil
	}
	return raw
}

// child opens raw, the value of key, as a nested object.
func (d *dec) child(key string, raw json.RawMessage) *dec {
	return openObject(raw, joinPath(d.path, key), d.errp)
}

// obj opens key as a nested object; a missing or null key reads as {}.
func (d *dec) obj(key string) *dec {
	raw := d.typed(key, "object", "a JSON object")
	if raw == nil {
		return &dec{path: joinPath(d.path, key), errp: d.errp}
	}
	return d.child(key, raw)
}

// optObj is obj, but reports whether key was present and not null.
func (d *dec) optObj(key string) (*dec, bool) {
	present := d.get(key) != nil
	return d.obj(key), present && !d.failed()
}

// array returns the elements of key; a missing or null key has none.
func (d *dec) array(key string) []json.RawMessage {
	raw := d.typed(key, "array", "an array")
	if raw == nil {
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		d.fail(key, err)
		return nil
	}
	return elems
}

// each opens every element of the array key as an object and calls fn.
func (d *dec) each(key string, fn func(e *dec)) {
	for i, raw := range d.array(key) {
		if d.failed() {
			return
		}
		fn(d.child(index(key, i), raw))
	}
}

func (d *dec) str(key string) string {
	raw := d.typed(key, "string", "a string")
	if raw == nil {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.fail(key, err)
	}
	return s
}

// reqStr is str for discriminators: missing, null or "" is an error.
func (d *dec) reqStr(key string) string {
	s := d.str(key)
	if s == "" && !d.failed() {
		d.failf(key, "missing")
	}
	return s
}

func (d *dec) strs(key string) []string {
	var out []string
	for i, raw := range d.array(key) {
		if kind(raw) != "string" {
			d.failf(index(key, i), "want a string")
			return nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			d.fail(index(key, i), err)
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (d *dec) boolean(key string) bool {
	return string(d.typed(key, "boolean", "a boolean")) == "true"
}

func (d *dec) int(key string) int {
	raw := d.typed(key, "number", "an integer")
	if raw == nil {
		return 0
	}
	n, err := strconv.ParseInt(string(raw), 10, strconv.IntSize)
	if err != nil {
		d.failf(key, "want an integer")
	}
	return int(n)
}

func (d *dec) int64(key string) int64 {
	raw := d.typed(key, "number", "an integer")
	if raw == nil {
		return 0
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		d.failf(key, "want an integer")
	}
	return n
}

func (d *dec) uint64(key string) uint64 {
	raw := d.typed(key, "number", "an unsigned integer")
	if raw == nil {
		return 0
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		d.failf(key, "want an unsigned integer")
	}
	return n
}

func (d *dec) float(key string) float64 {
	raw := d.typed(key, "number", "a number")
	if raw == nil {
		return 0
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		d.failf(key, "want a number in float64 range")
	}
	return f
}

// time reads an RFC 3339 timestamp; a missing or null key is the zero time.
func (d *dec) time(key string) time.Time {
	s := d.str(key)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		d.failf(key, "want an RFC 3339 timestamp")
		return time.Time{}
	}
	t = t.UTC()
	if t.Year() < 0 || t.Year() > 9999 {
		// An offset can push a four-digit year out of range; such a time
		// could not be encoded again.
		d.failf(key, "year %d out of range", t.Year())
		return time.Time{}
	}
	return t
}

// rawObject reads a JSON object kept as raw bytes, compacted; a missing key
// reads as {}.
func (d *dec) rawObject(key string) json.RawMessage {
	raw, ok := d.m[key]
	if !ok || d.failed() {
		return json.RawMessage("{}")
	}
	if kind(raw) != "object" {
		d.failf(key, "want a JSON object")
		return nil
	}
	return compact(raw)
}

// rawValue reads any JSON value kept as raw bytes, compacted; null or a
// missing key reads as nil.
func (d *dec) rawValue(key string) json.RawMessage {
	raw := d.get(key)
	if raw == nil {
		return nil
	}
	return compact(raw)
}

// peekType returns the string value of key in the top-level object raw, or
// fallback when there is none; it never fails.
func peekType(raw []byte, key, fallback string) string {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		return fallback
	}
	var s string
	if json.Unmarshal(probe[key], &s) != nil || s == "" {
		return fallback
	}
	return s
}
