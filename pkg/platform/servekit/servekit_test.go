package servekit_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/servekit"
)

// A started process is not ready until its service adds its own check:
// the bus and the database being up is not the service serving.
func TestNotReadyUntilTheServiceIs(t *testing.T) {
	ns := natstest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin := ln.Addr().String()
	ln.Close()
	env := map[string]string{"CLOPEN_NATS_URL": ns.ClientURL(), servekit.EnvAdminAddr: admin, "CLOPEN_LOG_LEVEL": "error"}
	p, closeAll, err := servekit.Start(context.Background(), func(k string) string { return env[k] }, io.Discard, servekit.Options{Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	ready := func() int {
		for range 50 {
			if resp, err := http.Get("http://" + admin + "/readyz"); err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the admin port never answered")
		return 0
	}
	if code := ready(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the service started = %d, want 503", code)
	}
	p.Health.Add("demo", func(context.Context) error { return nil })
	if code := ready(); code != http.StatusOK {
		t.Errorf("/readyz once the service serves = %d, want 200", code)
	}
}
