// Package jsonnul finds the NUL character (U+0000) in the strings of a JSON
// document. PostgreSQL's text and jsonb cannot hold it, so a request that
// carries one in any string, a value or an object key, would fail deep in a
// service as an internal error; each transport refuses it where it decodes
// the request instead, naming the field.
package jsonnul

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// escape is the only way JSON text spells U+0000: a raw NUL byte is not
// allowed in a JSON string, and the escape's hex digits have no case.
var escape = []byte(`\u0000`)

// Error is a string holding U+0000.
type Error struct {
	// Path is the value's JSON path, as in "prompt[0].text"; "" is the
	// top-level value. For a key, it is the path of the object.
	Path string
	// Key is the object key holding the NUL, quoted Go-style; "" when the
	// NUL is in a value.
	Key string
}

func (e *Error) Error() string {
	var where string
	switch {
	case e.Key != "" && e.Path != "":
		where = e.Path + ": key " + e.Key
	case e.Key != "":
		where = "key " + e.Key
	case e.Path != "":
		where = e.Path
	default:
		where = "the value"
	}
	return where + `: a string may not contain the NUL character (\u0000)`
}

// Check returns an *Error for the first string of data, in document order,
// that holds U+0000, and nil when none does. Data that is not valid JSON is
// checked up to where it breaks; reporting the break is the decoder's job.
func Check(data []byte) error {
	if !bytes.Contains(data, escape) {
		return nil // the common case: one pass, no parsing
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number out of float64's range is not an error here
	var st stack
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or malformed
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				st = append(st, level{object: true, wantKey: true})
			case '[':
				st = append(st, level{})
			default:
				st = st[:len(st)-1]
				st.valueDone()
			}
		case string:
			if top := st.top(); top != nil && top.object && top.wantKey {
				if strings.IndexByte(t, 0) >= 0 {
					return &Error{Path: st[:len(st)-1].path(), Key: strconv.Quote(t)}
				}
				top.key, top.wantKey = t, false
				continue
			}
			if strings.IndexByte(t, 0) >= 0 {
				return &Error{Path: st.path()}
			}
			st.valueDone()
		default:
			st.valueDone()
		}
	}
}

// level is one open object or array.
type level struct {
	object  bool
	wantKey bool   // an object's next string is a key
	key     string // an object's current key
	index   int    // an array's current element
}

type stack []level

func (s stack) top() *level {
	if len(s) == 0 {
		return nil
	}
	return &s[len(s)-1]
}

// valueDone moves the innermost level past the value just read.
func (s stack) valueDone() {
	switch top := s.top(); {
	case top == nil:
	case top.object:
		top.wantKey = true
	default:
		top.index++
	}
}

// path is the JSON path of the current value of the innermost level.
func (s stack) path() string {
	var b strings.Builder
	for _, l := range s {
		if l.object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(l.key)
			continue
		}
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(l.index))
		b.WriteByte(']')
	}
	return b.String()
}
