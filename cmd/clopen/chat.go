package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"clopen.dev/cmd/clopen/internal/chatcmd"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/client"
)

// runChat is `clopen chat`: a terminal chat with a session, against the
// gateway chatURL names, with $CLOPEN_API_KEY or the key `clopen dev` wrote
// to the data dir.
func runChat(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clopen chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o chatcmd.Options
	fs.StringVar(&o.Project, "project", "", "project id or name (default: the first you may use)")
	fs.StringVar(&o.Session, "session", "", "session id (default: the project's most recent)")
	fs.BoolVar(&o.New, "new", false, "start a new session")
	fs.StringVar(&o.Engine, "engine", "scripted", "engine of a new session; when given, used for every prompt")
	fs.StringVar(&o.Model, "model", "scripted/hello", "model of a new session; when given, used for every prompt")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { o.Pin = o.Pin || f.Name == "engine" || f.Name == "model" })
	url := chatURL(getenv)
	key, err := chatKey(getenv)
	if err != nil {
		return err
	}
	c := client.New(url, key)

	// Ctrl-C belongs to the chat now: it interrupts or cancels a turn, and
	// only ends the program at the prompt. Reset detaches it from main's
	// context; SIGTERM still ends everything.
	signal.Reset(os.Interrupt)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	interrupts := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			select {
			case <-sigs:
				select {
				case interrupts <- struct{}{}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	dial := func(ctx context.Context) (chatcmd.Conn, error) {
		conn, err := c.Dial(ctx)
		if err != nil {
			return nil, err
		}
		return conn, nil
	}
	return chatcmd.Run(ctx, c, dial, o, os.Stdin, stdout, interrupts)
}

// chatURL is the gateway chat talks to: $CLOPEN_URL, else the address
// `clopen dev` listens on, $CLOPEN_HTTP_ADDR (an address on every interface
// is reached on loopback), else the default one.
func chatURL(getenv func(string) string) string {
	if url := getenv("CLOPEN_URL"); url != "" {
		return strings.TrimRight(url, "/")
	}
	addr := getenv("CLOPEN_HTTP_ADDR")
	if addr == "" {
		addr = gateway.DefaultConfig().Addr
	}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
	}
	return "http://" + addr
}

// chatKey is $CLOPEN_API_KEY, else the key `clopen dev` keeps in the data
// dir.
func chatKey(getenv func(string) string) (string, error) {
	if k := getenv("CLOPEN_API_KEY"); k != "" {
		return k, nil
	}
	dir, err := dataDir(getenv)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, gateway.DevKeyFile)
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no API key: set CLOPEN_API_KEY, or run `clopen dev`, which writes %s", file)
	}
	if err != nil {
		return "", fmt.Errorf("read API key: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
