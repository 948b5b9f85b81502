// Package webui serves the web app: the single-page app that web/ builds,
// embedded in the binary from the committed build in dist/. A request for a
// built file gets it; any other path gets the app's index.html, whose
// client-side router shows the view the path names. The API's own paths
// never reach this handler (the REST mux answers an unknown /v1 path with a
// JSON 404 first).
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed all:dist
var dist embed.FS

// indexFile is the app's entry page, served for every path that is not a
// built file.
const indexFile = "index.html"

// CSP is the Content-Security-Policy of the app's pages: scripts, styles,
// fonts and connections (the REST API and the WebSocket) from the app's own
// origin only; images also from data: and blob: URLs (pasted screenshots);
// no plugins, no framing, no <base>. The built app holds no inline script or
// style, and rendered Markdown is sanitised before it reaches the page.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; " +
	"connect-src 'self'; worker-src 'self'; manifest-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// file is one built file, held in memory with its gzip form when that is
// smaller.
type file struct {
	name    string
	body    []byte
	gz      []byte
	etag    string
	ctype   string
	caching string
}

// Handler serves the app. It is safe for concurrent use.
type Handler struct {
	files map[string]*file // by path without the leading slash
	index *file
}

// New reads the embedded build. It fails only when the build lacks its
// index.html, which the repository's committed build always has.
func New() (*Handler, error) {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		return nil, fmt.Errorf("web app: %w", err)
	}
	return load(sub)
}

func load(fsys fs.FS) (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		h.files[p] = newFile(p, body)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web app: read build: %w", err)
	}
	if h.index = h.files[indexFile]; h.index == nil {
		return nil, fmt.Errorf("web app: the build has no %s (run npm run build in web/)", indexFile)
	}
	return h, nil
}

func newFile(name string, body []byte) *file {
	sum := sha256.Sum256(body)
	f := &file{name: name, body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	f.ctype = mime.TypeByExtension(path.Ext(name))
	if f.ctype == "" {
		f.ctype = http.DetectContentType(body)
	}
	// Vite names what it bundles by content hash under assets/: such a
	// name never changes meaning, so browsers may keep it for good. The
	// index and anything else must be checked on every load.
	f.caching = "no-cache"
	if strings.HasPrefix(name, "assets/") {
		f.caching = "public, max-age=31536000, immutable"
	}
	if compressible(f.ctype) && len(body) > 1024 {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		if b.Len() < len(body)*9/10 {
			f.gz = b.Bytes()
		}
	}
	return f
}

func compressible(ctype string) bool {
	for _, p := range []string{"text/", "application/javascript", "application/json", "image/svg+xml", "application/manifest+json"} {
		if strings.HasPrefix(ctype, p) {
			return true
		}
	}
	return false
}

// ServeHTTP answers GET and HEAD with the built file the path names, or
// with index.html for any other path (the app routes on the client).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := h.files[strings.TrimPrefix(path.Clean(r.URL.Path), "/")]
	if f == nil {
		f = h.index
	}
	SetHeaders(w.Header())
	hd := w.Header()
	hd.Set("Content-Type", f.ctype)
	hd.Set("Cache-Control", f.caching)
	hd.Add("Vary", "Accept-Encoding")
	body, etag := f.body, f.etag
	if f.gz != nil && acceptsGzip(r) {
		body, etag = f.gz, strings.TrimSuffix(f.etag, `"`)+`-gz"`
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("ETag", etag)
	// ServeContent answers If-None-Match (304) and ranges from the ETag;
	// a zero modification time leaves Last-Modified out.
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(body))
}

// SetHeaders sets the security headers of the app's responses: the CSP, no
// MIME sniffing, no framing, no referrer to other sites, a browsing context
// group of its own, and none of the powerful features the app does not use.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.TrimSpace(strings.ReplaceAll(q, " ", "")) != "q=0" {
			return true
		}
	}
	return false
}
