package jsonnul_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/jsonnul"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		give     string
		wantPath string // "-" for no NUL found
		wantKey  string
	}{
		{give: `{"text":"hello"}`, wantPath: "-"},
		{give: `{"text":"a\u0000b"}`, wantPath: "text"},
		{give: `{"text":"\u0000"}`, wantPath: "text"},
		{give: `{"title":"ok","name":"x\u0000"}`, wantPath: "name"},
		{give: `{"prompt":[{"type":"text","text":"hi"},{"type":"text","text":"\u0000"}]}`, wantPath: "prompt[1].text"},
		{give: `{"a":{"b":[1,true,null,{"c":"\u0000"}]}}`, wantPath: "a.b[3].c"},
		{give: `[[],["x","\u0000"]]`, wantPath: "[1][1]"},
		{give: `"\u0000"`, wantPath: ""},
		{give: `{"options":{"k\u0000":"v"}}`, wantPath: "options", wantKey: `"k\x00"`},
		{give: `{"k\u0000":1}`, wantPath: "", wantKey: `"k\x00"`},
		{give: `{"first":"\u0000","second":"\u0000"}`, wantPath: "first"},
		// An escaped backslash followed by u0000 is six characters, not NUL.
		{give: `{"text":"\\u0000"}`, wantPath: "-"},
		{give: `{"text":"\\\u0000"}`, wantPath: "text"},
		// Other escapes and characters pass.
		{give: `{"text":"\u0001\n\t\u00e9\ud83d\ude00 é"}`, wantPath: "-"},
		// Numbers float64 cannot hold do not stop the walk.
		{give: `{"n":1e999,"s":"\u0000"}`, wantPath: "s"},
		// Malformed JSON is the decoder's to report.
		{give: `{"text":"\u0000`, wantPath: "-"},
		{give: `{"text":`, wantPath: "-"},
		{give: ``, wantPath: "-"},
	}
	for _, tt := range tests {
		err := jsonnul.Check([]byte(tt.give))
		var e *jsonnul.Error
		switch {
		case tt.wantPath == "-" && err != nil:
			t.Errorf("Check(%s) = %v, want nil", tt.give, err)
		case tt.wantPath != "-" && !errors.As(err, &e):
			t.Errorf("Check(%s) = %v, want an *Error at %q", tt.give, err, tt.wantPath)
		case tt.wantPath != "-" && (e.Path != tt.wantPath || e.Key != tt.wantKey):
			t.Errorf("Check(%s) = path %q key %q, want %q %q", tt.give, e.Path, e.Key, tt.wantPath, tt.wantKey)
		}
	}
}

func TestErrorNamesTheField(t *testing.T) {
	tests := []struct {
		give jsonnul.Error
		want string
	}{
		{jsonnul.Error{Path: "prompt[0].text"}, `prompt[0].text: a string may not contain the NUL character (\u0000)`},
		{jsonnul.Error{Path: "options", Key: `"k\x00"`}, `options: key "k\x00": a string may not contain the NUL character (\u0000)`},
		{jsonnul.Error{Key: `"k\x00"`}, `key "k\x00": a string may not contain the NUL character (\u0000)`},
		{jsonnul.Error{}, `the value: a string may not contain the NUL character (\u0000)`},
	}
	for _, tt := range tests {
		if got := tt.give.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// FuzzCheck compares Check with a walk over the decoded value: every
// document with a NUL in a string is refused, at one of the places the NUL
// is; a document without one passes. A document with a repeated key decodes
// to its last value, so only the first half holds for it.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"text":"a\u0000"}`, `{"a":[{"k\u0000":1}]}`, `"\u0000"`, `{"t":"\\u0000"}`,
		`{"a":"\u0000","a":"x"}`, `[1,2,{"b":null}]`, `{"n":1e999}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := jsonnul.Check(data) // must not panic, whatever data is
		if !json.Valid(data) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		var want []string
		nulPaths(v, "", &want)
		var e *jsonnul.Error
		switch {
		case len(want) > 0 && !errors.As(err, &e):
			t.Fatalf("Check(%q) = %v; NULs at %q", data, err, want)
		case repeatsAKey(data):
		case len(want) == 0 && err != nil:
			t.Fatalf("Check(%q) = %v; no NUL in it", data, err)
		case err != nil && !slices.Contains(want, e.Path+"|"+e.Key):
			t.Fatalf("Check(%q) = path %q key %q; NULs at %q", data, e.Path, e.Key, want)
		}
	})
}

// nulPaths collects "path|key" of every string holding NUL.
func nulPaths(v any, path string, out *[]string) {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			*out = append(*out, path+"|")
		}
	case []any:
		for i, x := range v {
			nulPaths(x, path+"["+strconv.Itoa(i)+"]", out)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.IndexByte(k, 0) >= 0 {
				*out = append(*out, path+"|"+strconv.Quote(k))
			}
			p := k
			if path != "" {
				p = path + "." + k
			}
			nulPaths(v[k], p, out)
		}
	}
}

// repeatsAKey reports whether an object of data has a key twice.
func repeatsAKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type obj struct {
		seen    map[string]bool
		wantKey bool
	}
	var st []*obj // nil entries are arrays
	next := func() {
		if n := len(st); n > 0 && st[n-1] != nil {
			st[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				st = append(st, &obj{seen: map[string]bool{}, wantKey: true})
			case '[':
				st = append(st, nil)
			default:
				st = st[:len(st)-1]
				next()
			}
		case string:
			if n := len(st); n > 0 && st[n-1] != nil && st[n-1].wantKey {
				if st[n-1].seen[t] {
					return true
				}
				st[n-1].seen[t], st[n-1].wantKey = true, false
				continue
			}
			next()
		default:
			next()
		}
	}
}
