package frontmatter

import (
	"regexp"
	"strings"
)

// Get returns the field key.
func (d *Doc) Get(key string) (Field, bool) {
	for _, f := range d.Fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// Value returns the scalar value of key; a list is joined with ", ".
func (d *Doc) Value(key string) string {
	f, _ := d.Get(key)
	if f.Kind == List {
		return strings.Join(f.List, ", ")
	}
	return f.Value
}

// Set makes key a scalar, in place if it exists, else at the end. Setting
// the value it already has keeps the source verbatim.
func (d *Doc) Set(key, value string) {
	d.put(Field{Key: key, Kind: Scalar, Value: value})
}

// SetList makes key a list.
func (d *Doc) SetList(key string, items []string) {
	d.put(Field{Key: key, Kind: List, List: append([]string{}, items...)})
}

// SetMap makes key a nested map.
func (d *Doc) SetMap(key string, kvs []KV) {
	d.put(Field{Key: key, Kind: Map, Map: append([]KV(nil), kvs...)})
}

// Delete removes key.
func (d *Doc) Delete(key string) {
	for i, f := range d.Fields {
		if f.Key == key {
			d.Fields = append(d.Fields[:i], d.Fields[i+1:]...)
			return
		}
	}
}

func (d *Doc) put(nf Field) {
	for i, f := range d.Fields {
		if f.Key != nf.Key {
			continue
		}
		if sameValue(f, nf) {
			return
		}
		d.Fields[i] = nf
		return
	}
	d.Fields = append(d.Fields, nf)
}

func sameValue(a, b Field) bool {
	if a.Kind != b.Kind || a.Value != b.Value || len(a.List) != len(b.List) || len(a.Map) != len(b.Map) {
		return false
	}
	for i := range a.List {
		if a.List[i] != b.List[i] {
			return false
		}
	}
	for i := range a.Map {
		if a.Map[i] != b.Map[i] {
			return false
		}
	}
	return true
}

// String writes the document: unchanged fields verbatim, changed ones in a
// canonical form, then the body.
func (d *Doc) String() string {
	if !d.HasFrontmatter && len(d.Fields) == 0 {
		return d.Body
	}
	var b strings.Builder
	b.WriteString("---\n")
	b.WriteString(d.lead)
	for _, f := range d.Fields {
		if f.raw != "" {
			b.WriteString(f.raw)
			continue
		}
		b.WriteString(render(f))
	}
	b.WriteString("---\n")
	b.WriteString(d.Body)
	return b.String()
}

func render(f Field) string {
	switch f.Kind {
	case List:
		if len(f.List) == 0 {
			return f.Key + ": []\n"
		}
		var b strings.Builder
		b.WriteString(f.Key + ":\n")
		for _, it := range f.List {
			b.WriteString("  - " + Quote(it) + "\n")
		}
		return b.String()
	case Map:
		if len(f.Map) == 0 {
			return f.Key + ": {}\n"
		}
		var b strings.Builder
		b.WriteString(f.Key + ":\n")
		for _, kv := range f.Map {
			b.WriteString("  " + kv.Key + ": " + Quote(kv.Value) + "\n")
		}
		return b.String()
	}
	if f.Value == "" {
		return f.Key + ": \"\"\n"
	}
	return f.Key + ": " + Quote(f.Value) + "\n"
}

var plainSafe = regexp.MustCompile(`^[A-Za-z0-9_./(+=~^$][A-Za-z0-9 _,.;:/()+@=~%^$!?'-]*$`)

// Quote returns v as a one-line scalar that parses back to v: plain when
// that is unambiguous, double-quoted otherwise.
func Quote(v string) string {
	if plainSafe.MatchString(v) && !strings.HasSuffix(v, " ") && !strings.Contains(v, ": ") &&
		!strings.HasSuffix(v, ":") && !strings.Contains(v, " #") {
		return v
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
