package webui

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func testBuild() fstest.MapFS {
	return fstest.MapFS{
		"index.html":         {Data: []byte("<!doctype html><title>Clopen</title><script src=/assets/app-1a2b.js></script>")},
		"assets/app-1a2b.js": {Data: bytes.Repeat([]byte("console.log('the app');\n"), 200)},
		"favicon.svg":        {Data: []byte("<svg xmlns='http://www.w3.org/2000/svg'/>")},
	}
}

// The committed build loads, and has what the app needs.
func TestTheEmbeddedBuild(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(h.index.body, []byte("<title>Clopen</title>")) {
		t.Errorf("index.html = %.100q", h.index.body)
	}
	scripts := 0
	for name := range h.files {
		if strings.HasPrefix(name, "assets/") && strings.HasSuffix(name, ".js") {
			scripts++
		}
	}
	if scripts == 0 {
		t.Error("the build has no script under assets/")
	}
}

func TestABuildWithoutIndexIsRefused(t *testing.T) {
	if _, err := load(fstest.MapFS{"assets/x.js": {Data: []byte("x")}}); err == nil || !strings.Contains(err.Error(), "index.html") {
		t.Errorf("load without index.html = %v, want an error naming it", err)
	}
}

// FuzzServe: whatever the path and Accept-Encoding, the answer is 200 with
// the security headers and one of the build's files (the file the path
// names, else the index): a path never reaches anything outside the build.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{"/", "/assets/app-1a2b.js", "/../../etc/passwd", "/assets/../index.html", "/%2e%2e/secret",
		"/projects/x/sessions/y", "//favicon.svg", "/assets/", "/index.html/..", "/\x00"} {
		f.Add(seed, "gzip")
		f.Add(seed, "br;q=1, gzip;q=0")
	}
	h, err := load(testBuild())
	if err != nil {
		f.Fatal(err)
	}
	known := map[string]bool{}
	for _, file := range h.files {
		known[string(file.body)] = true
	}
	f.Fuzz(func(t *testing.T, path, acceptEncoding string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.Path = "/" + strings.TrimLeft(path, "/")
		req.Header.Set("Accept-Encoding", acceptEncoding)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %q = %d", req.URL.Path, rec.Code)
		}
		if rec.Header().Get("Content-Security-Policy") != CSP || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET %q: headers %v", req.URL.Path, rec.Header())
		}
		body := rec.Body.Bytes()
		if rec.Header().Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if !known[string(body)] {
			t.Fatalf("GET %q served %.80q, which is no file of the build", req.URL.Path, body)
		}
	})
}

func TestGzipOnlyWhenAccepted(t *testing.T) {
	h, _ := load(testBuild())
	for _, tt := range []struct {
		give string
		want bool
	}{{"gzip", true}, {"br, gzip", true}, {"GZIP;q=0.5", true}, {"gzip;q=0", false}, {"br", false}, {"", false}, {"x-gzip", false}} {
		req := httptest.NewRequest("GET", "/assets/app-1a2b.js", nil)
		req.Header.Set("Accept-Encoding", tt.give)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if got := rec.Header().Get("Content-Encoding") == "gzip"; got != tt.want {
			t.Errorf("Accept-Encoding %q: gzipped = %v, want %v", tt.give, got, tt.want)
		}
	}
}
