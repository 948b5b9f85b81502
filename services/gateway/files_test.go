package gateway_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/pkg/platform/snapshot/snapshottest"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
)

// get sends an authenticated GET and returns the status, headers and body.
func get(t *testing.T, u, key string) (int, http.Header, []byte) {
	t.Helper()
	return send(t, "GET", u, key, nil)
}

// getJSON GETs u and decodes a 200 answer into out.
func getJSON(t *testing.T, u, key string, out any) {
	t.Helper()
	status, _, data := get(t, u, key)
	if status != http.StatusOK {
		t.Fatalf("GET %s = %d %s", u, status, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, data)
	}
}

// wantError checks a GET answers status with an error message holding
// every one of parts.
func wantError(t *testing.T, u, key string, status int, parts ...string) {
	t.Helper()
	got, _, data := get(t, u, key)
	var e api.Error
	_ = json.Unmarshal(data, &e)
	if got != status {
		t.Errorf("GET %s = %d %s, want %d", u, got, data, status)
		return
	}
	for _, p := range parts {
		if !strings.Contains(e.Error.Message, p) {
			t.Errorf("GET %s: message %q lacks %q", u, e.Error.Message, p)
		}
	}
}

func TestSessionFiles(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.MaxFileBytes = 1024 })
	a := e.newTenant(t, "acme")
	b := e.newTenant(t, "bolt")
	ctx := context.Background()
	store, err := snapshot.ObjectStore(ctx, e.js, events.BucketSnapshots, 1)
	if err != nil {
		t.Fatal(err)
	}
	snaps := &snapshot.Snapshots{Store: store, Tenant: a.tenant.ID}

	files := map[string]string{
		"README.md":   "# Demo\n",
		"src/main.go": "package main\n\nfunc main() {\n\tprintln(1)\n}\n",
		"gone.txt":    "one\ntwo\n",
	}
	base := snapshottest.Workspace(t, snaps, "", nil, files)
	files["src/main.go"] = "package main\n\nfunc main() {\n\tprintln(2)\n\tprintln(3)\n}\n"
	delete(files, "gone.txt")
	files["logo.png"] = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	files["blob"] = "\x00\x01\x02\x03"
	files["big.bin"] = strings.Repeat("x", 2000)
	for i := range 250 {
		files[fmt.Sprintf("many/f%03d.txt", i)] = fmt.Sprintf("file %d\n", i)
	}
	headDir := t.TempDir() // a symlink and an empty directory besides the files
	if err := os.Symlink("README.md", filepath.Join(headDir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(headDir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := snapshottest.Workspace(t, snaps, headDir, base, files)

	if _, err := e.db.Exec(ctx, `UPDATE gateway.projects SET base_snapshot_id = $3 WHERE tenant_id = $1 AND id = $2`,
		a.tenant.ID, a.project.ID, base.ID); err != nil {
		t.Fatal(err)
	}
	sess, err := a.member.c.CreateSession(ctx, a.project.ID, api.CreateSession{Title: "work"})
	if err != nil || sess.BaseSnapshot != base.ID {
		t.Fatalf("session = %+v, %v; want base %s", sess, err, base.ID)
	}
	e.stub.setHead(sess.ID, head.ID)
	key := a.member.key
	at := e.url + "/v1/sessions/" + sess.ID

	// Paging: 200 by default, then the rest after the cursor, in path order.
	var page api.Files
	getJSON(t, at+"/files", key, &page)
	total := len(files) + 2
	if len(page.Files) != 200 || page.NextCursor != page.Files[199].Path || page.Files[0].Path != "README.md" {
		t.Fatalf("first page: %d files, next %q, first %+v", len(page.Files), page.NextCursor, page.Files[0])
	}
	seen := len(page.Files)
	var rest api.Files
	getJSON(t, at+"/files?limit=1000&cursor="+url.QueryEscape(page.NextCursor), key, &rest)
	if seen+len(rest.Files) != total || rest.NextCursor != "" || rest.Files[0].Path <= page.NextCursor {
		t.Errorf("second page: %d files (want %d), next %q, first %+v", len(rest.Files), total-seen, rest.NextCursor, rest.Files[0])
	}
	var src api.Files
	getJSON(t, at+"/files?prefix=src/", key, &src)
	want := api.File{Path: "src/main.go", Type: "file", Mode: "0644", Size: int64(len(files["src/main.go"])), SHA256: src.Files[0].SHA256}
	if len(src.Files) != 1 || src.Files[0] != want || len(want.SHA256) != 64 {
		t.Errorf("prefix src/ = %+v, want [%+v]", src.Files, want)
	}
	var two api.Files
	getJSON(t, at+"/files?prefix=many/&limit=2", key, &two)
	if len(two.Files) != 2 || two.Files[1].Path != "many/f001.txt" || two.NextCursor != "many/f001.txt" {
		t.Errorf("prefix many/ limit 2 = %+v", two)
	}
	var dirs, link api.Files
	getJSON(t, at+"/files?prefix=empty", key, &dirs)
	getJSON(t, at+"/files?prefix=link", key, &link)
	if len(dirs.Files) != 1 || dirs.Files[0] != (api.File{Path: "empty", Type: "dir", Mode: "0755"}) ||
		len(link.Files) != 1 || link.Files[0].Type != "symlink" || link.Files[0].Link != "README.md" {
		t.Errorf("prefix empty = %+v, prefix link = %+v", dirs.Files, link.Files)
	}
	wantError(t, at+"/files?limit=1001", key, http.StatusBadRequest, "limit")

	// One file: bytes as stored, typed by extension or content.
	for path, ctype := range map[string]string{"logo.png": "image/png", "blob": "application/octet-stream", "src/main.go": ""} {
		status, h, data := get(t, at+"/file?path="+url.QueryEscape(path), key)
		if status != http.StatusOK || string(data) != files[path] || !strings.HasPrefix(h.Get("Content-Type"), ctype) ||
			h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("file %s = %d %q %v", path, status, data, h)
		}
	}
	wantError(t, at+"/file?path=big.bin", key, http.StatusRequestEntityTooLarge, "2000 bytes", "1024")
	for _, bad := range []string{"", "/etc/passwd", "../x", "src/../README.md", "./README.md", `src\main.go`, "link", "empty"} {
		wantError(t, at+"/file?path="+url.QueryEscape(bad), key, http.StatusBadRequest)
	}
	wantError(t, at+"/file?path=nope.txt", key, http.StatusNotFound, "nope.txt")
	wantError(t, at+"/file?path=gone.txt", key, http.StatusNotFound)
	wantError(t, at+"/file?path=many", key, http.StatusNotFound) // a directory with files is no entry of its own

	// The session's diff against its base, with line counts and a patch.
	var d api.Diff
	getJSON(t, at+"/diff", key, &d)
	got := map[string]api.FileChange{}
	for _, c := range d.Changes {
		got[c.Path] = c
	}
	if len(d.Changes) != 256 || got["link"].Kind != "added" || d.From != base.ID || d.To != head.ID ||
		got["src/main.go"] != (api.FileChange{Path: "src/main.go", Kind: "changed", LinesAdded: 2, LinesRemoved: 1}) ||
		got["gone.txt"] != (api.FileChange{Path: "gone.txt", Kind: "deleted", LinesRemoved: 2}) ||
		!got["logo.png"].Binary || got["many/f007.txt"].LinesAdded != 1 {
		t.Errorf("diff: %d changes, from %s to %s: %+v", len(d.Changes), d.From, d.To, got)
	}
	if d.Truncated || !strings.Contains(d.Patch, "--- a/src/main.go\n+++ b/src/main.go\n") ||
		!strings.Contains(d.Patch, "-\tprintln(1)\n+\tprintln(2)\n+\tprintln(3)\n") ||
		!strings.Contains(d.Patch, "Binary files /dev/null and b/logo.png differ") {
		t.Errorf("patch (truncated %v):\n%s", d.Truncated, d.Patch)
	}

	// One turn's diff: what it started from against what it left.
	run, err := a.member.c.SendMessage(ctx, sess.ID, api.SendMessage{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, e.url+"/v1/runs/"+run.RunID+"/diff", key, http.StatusConflict, "no snapshot")
	e.stub.setRunSnapshots(run.RunID, "", base.ID)
	var rd api.Diff
	getJSON(t, e.url+"/v1/runs/"+run.RunID+"/diff", key, &rd)
	if len(rd.Changes) != 3 || rd.Changes[0].Kind != "added" || rd.From != "" || rd.To != base.ID {
		t.Errorf("run diff from nothing = %+v", rd)
	}

	// The archive holds the workspace as HEAD left it.
	status, h, data := get(t, at+"/archive", key)
	if status != http.StatusOK || h.Get("Content-Type") != "application/gzip" {
		t.Fatalf("archive = %d %v", status, h)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	inArchive := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		content, _ := io.ReadAll(tr)
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			inArchive[hdr.Name] = "-> " + hdr.Linkname
		case tar.TypeDir:
			inArchive[hdr.Name] = "dir"
		default:
			inArchive[hdr.Name] = string(content)
		}
	}
	if len(inArchive) != len(files)+2 || inArchive["link"] != "-> README.md" || inArchive["empty/"] != "dir" {
		t.Errorf("archive holds %d entries (want %d), link %q, empty/ %q", len(inArchive), len(files)+2, inArchive["link"], inArchive["empty/"])
	}
	for p, content := range files {
		if inArchive[p] != content {
			t.Errorf("archive %s = %q, want %q", p, inArchive[p], content)
		}
	}

	// A session with no snapshot is empty, not an error.
	empty := e.url + "/v1/sessions/" + a.session.ID
	var none api.Files
	getJSON(t, empty+"/files", key, &none)
	var nd api.Diff
	getJSON(t, empty+"/diff", key, &nd)
	if none.Files == nil || len(none.Files) != 0 || nd.Changes == nil || len(nd.Changes) != 0 || nd.Patch != "" {
		t.Errorf("empty session: files %+v, diff %+v", none, nd)
	}
	wantError(t, empty+"/file?path=README.md", key, http.StatusNotFound)
	if status, _, data := get(t, empty+"/archive", key); status != http.StatusOK || len(data) == 0 {
		t.Errorf("empty archive = %d, %d bytes", status, len(data))
	}

	// Another tenant, and a member outside the project, see nothing.
	for _, intruder := range []actor{b.admin, a.outsider} {
		for _, p := range []string{"/files", "/file?path=README.md", "/diff", "/archive"} {
			wantError(t, at+p, intruder.key, http.StatusNotFound)
		}
		wantError(t, e.url+"/v1/runs/"+run.RunID+"/diff", intruder.key, http.StatusNotFound)
	}
	// Tenant B's view of the store holds none of A's snapshots, even by id.
	if _, err := (&snapshot.Snapshots{Store: store, Tenant: b.tenant.ID}).Load(ctx, head.ID); err == nil {
		t.Errorf("tenant B loaded A's snapshot")
	}
}
