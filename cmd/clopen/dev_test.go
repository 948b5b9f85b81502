package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/platform/logging"
)

// TestDevAdminSaysOnlyWhatItBound: the banner names the admin listener only
// when it was bound; the default address taken is a warning naming the
// variable, an address asked for and taken is an error.
func TestDevAdminSaysOnlyWhatItBound(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	// Hold the default address too, unless another process already does:
	// either way it is taken.
	if ln, err := net.Listen("tcp", defaultAdminAddr); err == nil {
		defer ln.Close()
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()

	tests := []struct {
		give     string
		wantLine string
		wantErr  bool
	}{
		{give: "", wantLine: "health and metrics: not served, admin listener " + defaultAdminAddr},
		{give: taken.Addr().String(), wantErr: true},
		{give: freeAddr, wantLine: "health and metrics http://" + freeAddr + "/readyz /metrics"},
		{give: "off", wantLine: "health and metrics: off"},
	}
	logger := logging.New(testWriter{t}, "warn")
	for _, tt := range tests {
		getenv := func(k string) string {
			if k == "CLOPEN_ADMIN_ADDR" {
				return tt.give
			}
			return ""
		}
		line, stop, err := devAdmin(getenv, http.NotFoundHandler(), logger)
		switch {
		case tt.wantErr && (err == nil || !strings.Contains(err.Error(), "CLOPEN_ADMIN_ADDR")):
			t.Errorf("devAdmin(%q) = %q, %v; want an error naming CLOPEN_ADMIN_ADDR", tt.give, line, err)
		case !tt.wantErr && (err != nil || !strings.Contains(line, tt.wantLine)):
			t.Errorf("devAdmin(%q) = %q, %v; want a line containing %q", tt.give, line, err, tt.wantLine)
		}
		if err == nil {
			stop()
		}
	}
}

func TestReadyNote(t *testing.T) {
	tests := []struct {
		exe  string
		want string
	}{
		{exe: "/usr/local/bin/clopen", want: "started in 1.2s"},
		{exe: "/tmp/go-build1234/b001/exe/clopen", want: "started in 1.2s, after the build `go run` did first"},
	}
	for _, tt := range tests {
		if got := readyNote(1234*time.Millisecond, tt.exe); got != tt.want {
			t.Errorf("readyNote(%s) = %q, want %q", tt.exe, got, tt.want)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
