package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

// Every command answers -h and --help with its usage and success, never
// with an error about its arguments or a missing DATABASE_URL.
func TestEveryCommandHasHelp(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"dev", "--help"}, {"serve", "--help"}, {"serve", "gateway", "-h"}, {"migrate", "--help"},
		{"engines", "--help"}, {"engines", "install", "--help"}, {"engines", "doctor", "-h"}, {"chat", "--help"},
		{"bench", "-h"}, {"fakellm", "--help"}, {"admin", "--help"}, {"postgres", "--help"}, {"nats", "--help"},
		{"admin", "nats-config", "--help"}, {"admin", "nats-passwords", "-h"}, {"admin", "bus-keys", "-h"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, getenv, &out, &errOut)
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			t.Errorf("clopen %s: %v", strings.Join(args, " "), err)
			continue
		}
		if text := strings.ToLower(out.String() + errOut.String()); !strings.Contains(text, "usage") {
			t.Errorf("clopen %s printed no usage: %q", strings.Join(args, " "), text)
		}
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "clopen ") || !strings.Contains(out.String(), "go1.") {
		t.Errorf("clopen version = %q", out.String())
	}
}
