package frontmatter

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		give string
		want []Field
		body string
	}{
		{"plain", "---\nname: review-pr\ndescription: Reviews a PR\n---\nBody\n",
			[]Field{{Key: "name", Value: "review-pr"}, {Key: "description", Value: "Reviews a PR"}}, "Body\n"},
		{"bom and crlf", "\ufeff---\r\nname: a\r\n---\r\nx\r\n", []Field{{Key: "name", Value: "a"}}, "x\n"},
		{"quotes", "---\na: \"x: \\\"y\\\"\\n\"\nb: 'it''s'\nc: plain # comment\n---\n",
			[]Field{{Key: "a", Value: "x: \"y\"\n"}, {Key: "b", Value: "it's"}, {Key: "c", Value: "plain"}}, ""},
		{"block scalars folded", "---\ndescription: |\n  line one\n\n  line two\nlicense: >-\n  MIT\n---\n",
			[]Field{{Key: "description", Value: "line one line two"}, {Key: "license", Value: "MIT"}}, ""},
		{"plain continued", "---\ndescription: starts here\n  and goes on\n---\n",
			[]Field{{Key: "description", Value: "starts here and goes on"}}, ""},
		{"lists", "---\ntriggers: [auto, \"slash\"]\nuses:\n  - a\n  - 'b'\nempty: []\n---\n",
			[]Field{{Key: "triggers", Kind: List, List: []string{"auto", "slash"}}, {Key: "uses", Kind: List, List: []string{"a", "b"}},
				{Key: "empty", Kind: List, List: []string{}}}, ""},
		{"nested map", "---\nmetadata:\n  author: ada\n  version: \"1.0\"\n---\n",
			[]Field{{Key: "metadata", Kind: Map, Map: []KV{{"author", "ada"}, {"version", "1.0"}}}}, ""},
		{"no frontmatter", "# Just markdown\n", nil, "# Just markdown\n"},
		{"closing at eof", "---\na: b\n---", []Field{{Key: "a", Value: "b"}}, ""},
		{"empty value", "---\na:\n---\n", []Field{{Key: "a"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse(tt.give)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, d.Fields, cmp.Comparer(func(a, b Field) bool {
				return a.Key == b.Key && a.Kind == b.Kind && a.Value == b.Value && cmp.Equal(a.List, b.List) && cmp.Equal(a.Map, b.Map)
			})); diff != "" {
				t.Errorf("Parse fields (-want +got):\n%s", diff)
			}
			if d.Body != tt.body {
				t.Errorf("body = %q, want %q", d.Body, tt.body)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, give := range []string{
		"---\nname: a\n",                    // unterminated
		"---\njust text\n---\n",             // not a key
		"---\na: 1\na: 2\n---\n",            // duplicate
		"---\na: \"open\n---\n",             // unterminated quote
		"---\na: [x, y\n---\n",              // unterminated flow list
		"---\n  indented: first\n---\n",     // continuation without a key
		"---\na: \"x\" trailing\n---\n",     // text after the closing quote
		"---\nm:\n  not a pair\n---\n",      // bad nested line
		"---\na: \"bad \\q escape\"\n---\n", // unknown escape
	} {
		if _, err := Parse(give); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) err = %v, want ErrSyntax", give, err)
		}
	}
}

// TestRoundTripKeepsUnknownKeysVerbatim rewrites known keys and checks
// everything else comes back byte for byte.
func TestRoundTripKeepsUnknownKeysVerbatim(t *testing.T) {
	src := "---\n# leading comment\nname: review\nx-vendor:   [flow, \"style\"]   # kept\ndescription: >\n  Old\n  text\n\nhooks:\n  pre: run.sh\n---\n# Body\n\nText.\n"
	d, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != src {
		t.Fatalf("unchanged document does not round-trip:\n%q\n%q", d.String(), src)
	}
	d.Set("name", "review") // same value: verbatim
	d.Set("description", "New: text")
	d.SetList("triggers", []string{"slash"})
	got := d.String()
	want := "---\n# leading comment\nname: review\nx-vendor:   [flow, \"style\"]   # kept\ndescription: \"New: text\"\nhooks:\n  pre: run.sh\ntriggers:\n  - slash\n---\n# Body\n\nText.\n"
	if got != want {
		t.Errorf("rewritten =\n%s\nwant\n%s", got, want)
	}
	back, err := Parse(got)
	if err != nil || back.Value("description") != "New: text" || back.Value("triggers") != "slash" {
		t.Errorf("re-parse = %+v, %v", back, err)
	}
}

func TestQuoteParsesBack(t *testing.T) {
	for _, v := range []string{"plain", "with: colon", "#hash", "a #b", "- dash", "[x]", "'q'", "\"dq\"", "tab\there",
		"new\nline", " lead", "trail ", "<angle>", "ünïcode", "back\\slash", "", "true", "100", "a: b: c", "x:"} {
		d, err := Parse("---\nk: " + Quote(v) + "\n---\n")
		if err != nil {
			t.Errorf("Quote(%q) = %s: %v", v, Quote(v), err)
			continue
		}
		if got := d.Value("k"); got != strings.TrimSpace(v) && got != v {
			t.Errorf("Quote(%q) = %s parses back as %q", v, Quote(v), got)
		}
	}
}
