package engines

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
)

// The pinned ACP agents (acp's constants).
const (
	GeminiVersion   = acp.GeminiVersion
	QwenVersion     = acp.QwenVersion
	CopilotVersion  = acp.CopilotVersion
	OpenCodeVersion = acp.OpenCodeVersion
	ClineVersion    = acp.ClineVersion
)

// acpSpecs are the rows of the ACP agents: the installed ones as their
// profiles pin them, then the two Clopen finds installed elsewhere.
var acpSpecs = []Spec{
	acpSpec(&acp.Gemini),
	acpSpec(&acp.Qwen),
	acpSpec(&acp.Copilot),
	acpSpec(&acp.OpenCode),
	acpSpec(&acp.Cline),
	{
		// Cursor's agent is not on npm: its installer downloads a binary,
		// which this machine cannot do. The profile follows the protocol
		// and has never run against the real CLI.
		Type: events.EngineCursor, Pin: engine.Pin{Version: "any", VersionArgs: []string{"--version"}},
		Layout: acp.Cursor.Layout(),
		External: func(s Setup) (string, error) {
			return lookBin(s, "CLOPEN_CURSOR_BIN", "cursor-agent",
				"Cursor's agent CLI is not installed (it is not on npm: install it with Cursor's installer, or set CLOPEN_CURSOR_BIN); Clopen's cursor profile is untested")
		},
		Untested: true,
		Account: func(ctx context.Context, s Setup) error {
			_, err := s.acpCredentials(&acp.Cursor).Credential(ctx, "", "")
			return err
		},
		Factory: func(bin string, s Setup) engine.Factory { return acpFactory(&acp.Cursor, bin, s) },
	},
	{
		// Any agent an operator configures with CLOPEN_ACP_CONFIG or
		// CLOPEN_ACP_COMMAND; offered when its command resolves.
		Type: events.EngineACP, Pin: engine.Pin{Version: "any", VersionArgs: []string{"--version"}},
		Layout: acp.Custom(acp.CustomConfig{}).Layout(),
		External: func(s Setup) (string, error) {
			cfg, ok, err := acp.CustomFromEnv(s.getenv)
			if err != nil {
				return "", err
			}
			if !ok {
				return "", fmt.Errorf("%w: no ACP agent is configured (set CLOPEN_ACP_COMMAND, or CLOPEN_ACP_CONFIG as JSON {command,args,env})", ErrNotInstalled)
			}
			bin, err := exec.LookPath(cfg.Command)
			if err != nil {
				return "", fmt.Errorf("%w: the configured ACP agent %q does not resolve: %v", ErrNotInstalled, cfg.Command, err)
			}
			return bin, nil
		},
		Factory: func(bin string, s Setup) engine.Factory {
			cfg, _, _ := acp.CustomFromEnv(s.getenv)
			return acpFactory(acp.Custom(cfg), bin, s)
		},
	},
}

// acpSpec is the row of an npm-installed ACP agent.
func acpSpec(p *acp.Profile) Spec {
	pin, _ := p.Pin()
	return Spec{
		Type: p.Type, Pin: pin, Layout: p.Layout(),
		Account: func(ctx context.Context, s Setup) error {
			_, err := s.acpCredentials(p).Credential(ctx, "", "")
			return err
		},
		ModelServer: func(ctx context.Context, s Setup) string {
			c, _ := s.acpCredentials(p).Credential(ctx, "", "")
			return c.BaseURL
		},
		Factory: func(bin string, s Setup) engine.Factory { return acpFactory(p, bin, s) },
	}
}

func acpFactory(p *acp.Profile, bin string, s Setup) engine.Factory {
	creds := acpAccounts{s, p}
	return func(_ context.Context, key engine.Key) (engine.Engine, error) {
		return acp.New(acp.Config{Process: engine.Process{Bin: bin, StateDir: s.stateDir(p.Type), Logger: s.Logger, Sandbox: s.Sandbox}, Profile: p, CacheDir: filepath.Join(s.DataDir, "engine-cache"), Credentials: creds, MaxRetries: 2}, key), nil
	}
}

func (s Setup) acpCredentials(p *acp.Profile) acp.EnvCredentials {
	return acp.EnvCredentials{Getenv: s.getenv, Profile: p, BaseURL: s.LLMBaseURL}
}

// lookBin finds an executable installed outside Clopen: the path in env
// var, else the first of names on PATH.
func lookBin(s Setup, env string, names ...string) (string, error) {
	msg := names[len(names)-1]
	names = names[:len(names)-1]
	if p := s.getenv(env); p != "" {
		names = []string{p}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.Join(ErrNotInstalled, errors.New(msg))
}
