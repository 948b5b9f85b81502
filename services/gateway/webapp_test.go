package gateway_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"clopen.dev/services/gateway/internal/webui"
)

// fetchRaw sends a GET with optional headers and returns the response and its
// (decompressed by hand: Accept-Encoding set explicitly disables Go's
// transparent gzip) body.
func fetchRaw(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// TestWebAppServedAtRoot: the web app's index answers / and every path that
// is neither a built file nor the API's (the app routes on the client), with
// the security headers; built files are served as themselves, hashed assets
// cached for good and gzipped when the browser accepts it; the API's
// unknown paths stay JSON 404s, and its other routes are untouched.
func TestWebAppServedAtRoot(t *testing.T) {
	e := newEnv(t, nil)
	var index []byte
	for _, path := range []string{"/", "/projects/x/sessions/y", "/settings/skills", "/index.html"} {
		resp, body := fetchRaw(t, e.url+path, nil)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!bytes.Contains(body, []byte("<title>Clopen</title>")) {
			t.Fatalf("GET %s = %d %s %.80q, want the app's index", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		h := resp.Header
		if h.Get("Content-Security-Policy") != webui.CSP || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-cache" || h.Get("ETag") == "" {
			t.Errorf("GET %s headers = %v, want the CSP, nosniff, no framing, revalidation", path, h)
		}
		index = body
	}
	if !strings.Contains(webui.CSP, "script-src 'self'") || strings.Contains(webui.CSP, "unsafe") {
		t.Errorf("CSP %q allows more than the app's own scripts", webui.CSP)
	}

	// A hashed asset the index loads.
	asset := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+\.js)"`).FindSubmatch(index)
	if asset == nil {
		t.Fatalf("the index loads no script from /assets/: %s", index)
	}
	resp, plain := fetchRaw(t, e.url+string(asset[1]), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") ||
		resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("GET %s = %d %v, want the script, cached for good, not encoded", asset[1], resp.StatusCode, resp.Header)
	}
	resp, zipped := fetchRaw(t, e.url+string(asset[1]), map[string]string{"Accept-Encoding": "br, gzip"})
	if resp.Header.Get("Content-Encoding") != "gzip" || len(zipped) >= len(plain) {
		t.Errorf("gzip accepted: encoding %q, %d bytes of %d", resp.Header.Get("Content-Encoding"), len(zipped), len(plain))
	} else if zr, err := gzip.NewReader(bytes.NewReader(zipped)); err != nil {
		t.Error(err)
	} else if unzipped, _ := io.ReadAll(zr); !bytes.Equal(unzipped, plain) {
		t.Error("the gzipped script differs from the script")
	}
	etag := resp.Header.Get("ETag")
	if resp, _ := fetchRaw(t, e.url+string(asset[1]), map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etag}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match %s = %d, want 304", etag, resp.StatusCode)
	}

	// The API keeps its own answers.
	for _, tt := range []struct{ method, path string }{{"GET", "/v1/nope"}, {"GET", "/v1"}, {"POST", "/settings"}, {"DELETE", "/"}} {
		status, _, body := rawDo(t, tt.method, e.url+tt.path, "", nil)
		if status != http.StatusNotFound || body.Error.Code != "not_found" || !strings.Contains(body.Error.Message, "no route") {
			t.Errorf("%s %s = %d %+v, want a JSON 404", tt.method, tt.path, status, body.Error)
		}
	}
	resp, body := fetchRaw(t, e.url+"/openapi.json", nil)
	var doc map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &doc) != nil || doc["openapi"] == nil {
		t.Errorf("GET /openapi.json = %d %.80q, want the document", resp.StatusCode, body)
	}
	if resp, _ := fetchRaw(t, e.url+"/healthz", nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") == "text/html; charset=utf-8" {
		t.Errorf("GET /healthz = %d %s, want the health answer", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
