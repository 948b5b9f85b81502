package gateway_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
)

// tarGz builds a tar.gz of files (name → content; a value starting with
// "->" is a symlink to the rest).
func tarGz(t *testing.T, files [][2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		h := &tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}
		if target, ok := strings.CutPrefix(f[1], "->"); ok {
			h = &tar.Header{Name: f[0], Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: target}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(f[1])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, files [][2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// baseFiles reads the workspace tree of a project's base snapshot from the
// snapshot store: path → content.
func (e *env) baseFiles(t *testing.T, tenant, id string) map[string]string {
	t.Helper()
	ctx := context.Background()
	store, err := snapshot.ObjectStore(ctx, e.js, events.BucketSnapshots, 1)
	if err != nil {
		t.Fatal(err)
	}
	snaps := &snapshot.Snapshots{Store: store, Tenant: tenant}
	m, err := snaps.Load(ctx, id)
	if err != nil {
		t.Fatalf("load base %s: %v", id, err)
	}
	out := map[string]string{}
	for _, en := range m.Trees[snapshot.WorkspaceTree] {
		if !en.IsFile() {
			continue
		}
		rc, _, err := snaps.Open(ctx, m, snapshot.WorkspaceTree, en.Path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		out[en.Path] = string(b)
	}
	return out
}

func TestArchiveBecomesTheBase(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.MaxArchiveBytes = 64 << 10 })
	a := e.newTenant(t, "acme")
	b := e.newTenant(t, "bolt")
	ctx := context.Background()

	good := tarGz(t, [][2]string{{"README.md", "hello\n"}, {"src/main.go", "package main\n"}, {"link", "->README.md"}})
	pr, err := a.admin.c.UploadArchive(ctx, a.project.ID, "application/gzip", bytes.NewReader(good))
	if err != nil {
		t.Fatalf("upload tar.gz: %v", err)
	}
	if pr.Source.Kind != api.SourceArchive || pr.BaseSnapshot == "" || pr.BaseCommit != "" {
		t.Fatalf("project after upload = %+v", pr)
	}
	if got := e.baseFiles(t, a.tenant.ID, pr.BaseSnapshot); len(got) != 2 || got["README.md"] != "hello\n" || got["src/main.go"] != "package main\n" {
		t.Errorf("base files = %v", got)
	}
	first := pr.BaseSnapshot

	// A hostile archive is refused, naming the entry, and the base stays.
	for name, archive := range map[string][]byte{
		"dotdot":   tarGz(t, [][2]string{{"ok.txt", "x"}, {"../escape.txt", "x"}}),
		"absolute": tarGz(t, [][2]string{{"/etc/passwd", "x"}}),
		"link out": tarGz(t, [][2]string{{"out", "->../../etc"}}),
		"bomb":     tarGz(t, [][2]string{{"zeros", strings.Repeat("\x00", 8<<20)}}),
	} {
		_, err := a.admin.c.UploadArchive(ctx, a.project.ID, "", bytes.NewReader(archive))
		wantStatus(t, name, err, http.StatusBadRequest)
		if err != nil && !strings.Contains(err.Error(), "archive entry") {
			t.Errorf("%s: error %q does not name the entry", name, err)
		}
		if p, _ := a.admin.c.Project(ctx, a.project.ID); p.BaseSnapshot != first {
			t.Errorf("%s: base moved to %s", name, p.BaseSnapshot)
		}
	}
	_, err = a.admin.c.UploadArchive(ctx, a.project.ID, "", strings.NewReader("not an archive at all"))
	wantStatus(t, "garbage", err, http.StatusBadRequest)
	_, err = a.admin.c.UploadArchive(ctx, a.project.ID, "application/zip", bytes.NewReader(make([]byte, 65<<10)))
	wantStatus(t, "over the cap", err, http.StatusRequestEntityTooLarge)

	// A zip told from its bytes replaces the base.
	pr, err = a.admin.c.UploadArchive(ctx, a.project.ID, "application/octet-stream", bytes.NewReader(zipOf(t, [][2]string{{"z/one.txt", "1"}})))
	if err != nil {
		t.Fatalf("upload zip: %v", err)
	}
	if pr.BaseSnapshot == first {
		t.Error("the zip did not change the base")
	}
	if got := e.baseFiles(t, a.tenant.ID, pr.BaseSnapshot); len(got) != 1 || got["z/one.txt"] != "1" {
		t.Errorf("base files after the zip = %v", got)
	}

	// Members may not set it; another tenant does not see the project.
	_, err = a.member.c.UploadArchive(ctx, a.project.ID, "", bytes.NewReader(good))
	wantStatus(t, "member", err, http.StatusForbidden)
	_, err = b.admin.c.UploadArchive(ctx, a.project.ID, "", bytes.NewReader(good))
	wantStatus(t, "other tenant", err, http.StatusNotFound)
	if p, _ := a.admin.c.Project(ctx, a.project.ID); p.BaseSnapshot != pr.BaseSnapshot {
		t.Errorf("base after refused uploads = %s, want %s", p.BaseSnapshot, pr.BaseSnapshot)
	}
}
