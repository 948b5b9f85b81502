package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// marshal is json.Marshal without HTML escaping and without the trailing
// newline. It produces the canonical form: agent transcripts are full of
// code, and escaping every <, > and & would bloat them for nothing.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// compact returns raw without insignificant whitespace. raw must be valid.
func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return b.Bytes()
}

// wireTime formats t as the wire carries it: RFC 3339 with nanoseconds, UTC.
func wireTime(field string, t time.Time) (string, error) {
	t = t.UTC()
	if t.Year() < 0 || t.Year() > 9999 {
		return "", fmt.Errorf("%s: year %d out of range", field, t.Year())
	}
	return t.Format(time.RFC3339Nano), nil
}

// nullable encodes "" as null: the convention for every string|null field.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// checkObject reports whether raw is empty or a JSON object.
func checkObject(field string, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if !json.Valid(raw) || kind(raw) != "object" {
		return fmt.Errorf("%s: want a JSON object", field)
	}
	return nil
}

// checkRaw reports whether raw is empty or valid JSON.
func checkRaw(field string, raw json.RawMessage) error {
	if len(raw) != 0 && !json.Valid(raw) {
		return fmt.Errorf("%s: invalid JSON", field)
	}
	return nil
}

// rawOr returns raw compacted, or def when raw is empty.
func rawOr(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return compact(raw)
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// encodeErr wraps err with the operation, "encode <typ>".
func encodeErr(typ string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("encode %s: %w", typ, err)
}

// isNil reports whether v is nil or a nil pointer in an interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// appendString appends s as a JSON string. Plain ASCII is copied as is; a
// string needing escapes goes through encoding/json (HTML characters kept).
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendField appends ,"name":"value" (or the first field without a comma).
func appendField(b []byte, first bool, name, value string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}
