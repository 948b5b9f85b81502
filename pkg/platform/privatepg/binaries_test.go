package privatepg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindBinaries(t *testing.T) {
	tests := []struct {
		name  string
		files []string          // executables to create, relative to the test root
		links map[string]string // symlink -> target, relative to the test root
		path  string            // PATH entry, relative to the test root
		want  string            // relative to the test root; "" means ErrNoPostgres
	}{
		{
			name:  "PATH first",
			files: []string{"bin/initdb", "bin/postgres", "debian/16/bin/initdb", "debian/16/bin/postgres"},
			path:  "bin",
			want:  "bin",
		},
		{
			name:  "PATH symlink resolves to the real bin dir",
			files: []string{"pg/bin/initdb", "pg/bin/postgres"},
			links: map[string]string{"local/initdb": "pg/bin/initdb"},
			path:  "local",
			want:  "pg/bin",
		},
		{
			name:  "PATH without postgres falls through to the highest Debian version",
			files: []string{"bin/initdb", "debian/9.6/bin/initdb", "debian/9.6/bin/postgres", "debian/15/bin/initdb", "debian/15/bin/postgres", "debian/10/bin/initdb", "debian/10/bin/postgres"},
			path:  "bin",
			want:  "debian/15/bin",
		},
		{
			name:  "Debian version without a server is skipped",
			files: []string{"debian/16/bin/initdb", "debian/15/bin/initdb", "debian/15/bin/postgres"},
			path:  "empty",
			want:  "debian/15/bin",
		},
		{
			name: "nothing installed",
			path: "empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range append(tt.files, "empty/", "debian/") {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(f, "/") {
					if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			for link, target := range tt.links {
				p := filepath.Join(root, link)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(root, target), p); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", filepath.Join(root, tt.path))
			defer func(old string) { debianRoot = old }(debianRoot)
			debianRoot = filepath.Join(root, "debian")

			got, err := FindBinaries()
			if tt.want == "" {
				if !errors.Is(err, ErrNoPostgres) || !strings.Contains(err.Error(), "apt-get install postgresql") {
					t.Fatalf("FindBinaries() = %q, %v, want ErrNoPostgres naming the package", got, err)
				}
				return
			}
			if want := filepath.Join(root, tt.want); err != nil || got != want {
				t.Fatalf("FindBinaries() = %q, %v, want %q", got, err, want)
			}
		})
	}
}
