package frontmatter

import (
	"testing"
)

// FuzzParse checks that Parse never panics, that a parsed document writes
// back to text that parses to the same fields and body, and that rewriting
// every field in canonical form parses back to the same values.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"---\nname: a\ndescription: b\n---\nbody",
		"\ufeff---\r\nname: a\r\n---\r\n",
		"---\ndescription: |\n  x\n\n  y\n---\n",
		"---\nuses: [a, 'b', \"c\"]\nlist:\n  - x\n  - y\nmetadata:\n  k: v\n---\n",
		"---\na: \"esc \\\" \\n\"\nb: 'q''q'\n---\n",
		"no frontmatter",
		"---\n---\n",
		"---\n# c\n\nk: v # c\n---",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		d, err := Parse(src)
		if err != nil {
			return
		}
		again, err := Parse(d.String())
		if err != nil {
			t.Fatalf("written document does not parse: %v\n%q", err, d.String())
		}
		same(t, d, again)
		// Canonical rewrite of every field.
		canon := &Doc{HasFrontmatter: true, Body: d.Body}
		for _, fl := range d.Fields {
			switch fl.Kind {
			case List:
				canon.SetList(fl.Key, fl.List)
			case Map:
				canon.SetMap(fl.Key, fl.Map)
			default:
				canon.Set(fl.Key, fl.Value)
			}
		}
		back, err := Parse(canon.String())
		if err != nil {
			t.Fatalf("canonical document does not parse: %v\n%q", err, canon.String())
		}
		same(t, canon, back)
	})
}

func same(t *testing.T, a, b *Doc) {
	t.Helper()
	if a.Body != b.Body || len(a.Fields) != len(b.Fields) {
		t.Fatalf("round trip changed the document:\n%+v\n%+v", a, b)
	}
	for i := range a.Fields {
		x, y := a.Fields[i], b.Fields[i]
		if x.Key != y.Key || x.Kind != y.Kind || x.Value != y.Value || len(x.List) != len(y.List) || len(x.Map) != len(y.Map) {
			t.Fatalf("field %d: %+v != %+v", i, x, y)
		}
		for j := range x.List {
			if x.List[j] != y.List[j] {
				t.Fatalf("field %s item %d: %q != %q", x.Key, j, x.List[j], y.List[j])
			}
		}
		for j := range x.Map {
			if x.Map[j] != y.Map[j] {
				t.Fatalf("field %s entry %d: %q != %q", x.Key, j, x.Map[j], y.Map[j])
			}
		}
	}
}
