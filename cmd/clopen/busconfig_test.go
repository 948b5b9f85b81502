package main

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.yaml.in/yaml/v3"

	"clopen.dev/pkg/platform/busauth"
)

// The shipped bus configuration is what busauth generates today: a grant
// edited in code and not regenerated would leave compose and Kubernetes
// with the old one.
func TestShippedBusConfigIsGenerated(t *testing.T) {
	for _, f := range []struct{ path, want, regen string }{
		{"../../deploy/nats/auth.conf", busauth.ServerConfig(), "clopen admin nats-config > deploy/nats/auth.conf"},
		{"../../deploy/k8s/nats-auth-values.yaml", busauth.HelmValues(natsSecret), "clopen admin nats-config --helm > deploy/k8s/nats-auth-values.yaml"},
	} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != f.want {
			t.Errorf("%s is not what busauth generates: run `go run ./cmd/clopen %s`", f.path, strings.TrimPrefix(f.regen, "clopen "))
		}
	}
	var values struct {
		Config struct {
			Merge struct {
				Authorization struct {
					Users []struct{ User, Password string }
				}
			}
		}
		Container struct {
			Env map[string]struct {
				ValueFrom struct {
					SecretKeyRef struct{ Name, Key string } `yaml:"secretKeyRef"`
				} `yaml:"valueFrom"`
			}
		}
	}
	if err := yaml.Unmarshal([]byte(busauth.HelmValues(natsSecret)), &values); err != nil {
		t.Fatalf("the Helm values are not YAML: %v", err)
	}
	users := values.Config.Merge.Authorization.Users
	if len(users) != len(busauth.Roles) {
		t.Fatalf("Helm values have %d users, want %d", len(users), len(busauth.Roles))
	}
	for _, u := range users {
		v := busauth.PasswordVar(busauth.Role(u.User))
		if u.Password != "<< $"+v+" >>" {
			t.Errorf("user %s: password %q, want the chart's literal of $%s", u.User, u.Password, v)
		}
		if ref := values.Container.Env[v].ValueFrom.SecretKeyRef; ref.Name != natsSecret || ref.Key != v {
			t.Errorf("user %s: the server's %s comes from %+v, want secret %s key %s", u.User, v, ref, natsSecret, v)
		}
	}
}

// The NATS server of docker-compose.yml, started from its own
// configuration file, takes each service with its password and nobody
// without one, and holds a service to its grant.
func TestComposeBusEnforcesTheGrants(t *testing.T) {
	pw := busauth.NewPasswords()
	for r, p := range pw {
		t.Setenv(busauth.PasswordVar(r), p)
	}
	opts, err := server.ProcessConfigFile("../../deploy/nats/nats.conf")
	if err != nil {
		t.Fatalf("nats-server refuses deploy/nats/nats.conf: %v", err)
	}
	if !opts.JetStream || opts.HTTPPort != 8222 || len(opts.Users) != len(busauth.Roles) {
		t.Fatalf("config: jetstream %v, monitoring port %d, %d users; want JetStream, 8222 and %d users",
			opts.JetStream, opts.HTTPPort, len(opts.Users), len(busauth.Roles))
	}
	opts.StoreDir, opts.Host, opts.Port, opts.HTTPPort = t.TempDir(), "127.0.0.1", -1, 0
	opts.NoLog, opts.NoSigs = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	if nc, err := nats.Connect(ns.ClientURL()); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected to the compose bus")
	}
	if nc, err := nats.Connect(ns.ClientURL(), busauth.Options(busauth.Worker, pw[busauth.Gateway])...); err == nil {
		nc.Close()
		t.Fatal("the engine worker's user connected with the gateway's password")
	}
	violations := make(chan error, 4)
	nc, err := nats.Connect(ns.ClientURL(), append(busauth.Options(busauth.Worker, pw[busauth.Worker]),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))...)
	if err != nil {
		t.Fatalf("the engine worker cannot connect with its password: %v", err)
	}
	defer nc.Close()
	// A worker reading every chat's events, or the gateway's replies.
	if _, err := nc.SubscribeSync("ev.>"); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("subscribing ev.> failed with %v, want a permissions violation", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the engine worker subscribed to ev.> on the compose bus")
	}
}
