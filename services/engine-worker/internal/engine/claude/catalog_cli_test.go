package claude_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// cliModel is one model of the pinned CLI's initialize response.
type cliModel struct {
	Value           string   `json:"value"`
	ResolvedModel   string   `json:"resolvedModel"`
	Description     string   `json:"description"`
	EffortLevels    []string `json:"supportedEffortLevels"`
	SupportsThkgOff bool     `json:"supportsThinkingOff"`
}

var price = regexp.MustCompile(`\$([0-9.]+)/\$([0-9.]+) per Mtok`)

// TestCatalogInStepWithCLI asks the pinned CLI for its models (the
// initialize response, as the Agent SDK reads it) and checks the static
// catalog against it: every model the CLI offers is in the catalog with the
// CLI's effort levels (plus auto) and price, and thinking can be turned off
// exactly where the CLI allows it. A new CLI version that changes its models
// fails here until the table follows.
func TestCatalogInStepWithCLI(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineClaudeCode)
	sb := enginetest.NewSandbox(t, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, sb.Wrap[0], append(sb.Wrap[1:], bin, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json")...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "CLAUDE_CONFIG_DIR=" + home + "/.claude",
		"ANTHROPIC_BASE_URL=" + sb.BaseURL, "ANTHROPIC_API_KEY=" + claude.PlaceholderKey, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	fmt.Fprintln(stdin, `{"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}`)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 8<<20)
	var models []cliModel
	for sc.Scan() {
		var line struct {
			Type     string `json:"type"`
			Response struct {
				Response struct {
					Models []cliModel `json:"models"`
				} `json:"response"`
			} `json:"response"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Type == "control_response" {
			models = line.Response.Response.Models
			break
		}
	}
	if len(models) == 0 {
		t.Fatalf("no models in the CLI's initialize response (scan: %v)", sc.Err())
	}
	catalog := claude.Catalog()
	for _, cm := range models {
		m, ok := engine.FindModel(catalog, cm.ResolvedModel)
		if !ok {
			t.Errorf("the CLI offers %s (%s), the catalog lacks it", cm.ResolvedModel, cm.Value)
			continue
		}
		if cm.Value == "default" && m.ID != catalog[0].ID {
			t.Errorf("the CLI's default is %s, the catalog's %s", cm.ResolvedModel, catalog[0].ID)
		}
		var levels []string
		for _, l := range m.Capabilities.ReasoningControl.Levels {
			levels = append(levels, l.Value)
		}
		want := append([]string{claude.LevelAuto}, cm.EffortLevels...)
		if cm.SupportsThkgOff {
			want = append([]string{claude.LevelOff}, want...)
		}
		if !slices.Equal(levels, want) {
			t.Errorf("%s: levels %q, the CLI's %q", m.ID, levels, want)
		}
		if p := price.FindStringSubmatch(cm.Description); p == nil {
			t.Errorf("%s: no price in the CLI's description %q", m.ID, cm.Description)
		} else if in, _ := strconv.ParseFloat(p[1], 64); in != m.Cost.Input {
			t.Errorf("%s: input price %v, the CLI's %v", m.ID, m.Cost.Input, in)
		} else if out, _ := strconv.ParseFloat(p[2], 64); out != m.Cost.Output {
			t.Errorf("%s: output price %v, the CLI's %v", m.ID, m.Cost.Output, out)
		}
	}
}

// TestGenerateOnTheCLI: a structured generation on the pinned CLI is one
// model call that offers nothing but the StructuredOutput tool, and the
// document comes back from the result's structured_output.
func TestGenerateOnTheCLI(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineClaudeCode)
	sb := enginetest.NewSandbox(t, time.Second)
	e := claude.New(claude.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: sb.Wrap}, Credentials: claude.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineClaudeCode})
	defer e.Dispose(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	doc, err := e.Generate(ctx, engine.GenerateRequest{Model: "claude-haiku-5-5", Workspace: t.TempDir(), Prompt: "@@TOOL@@ Name the branch.",
		Schema: json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`)})
	if err != nil || string(doc) != `{"name":"fakellm"}` {
		t.Fatalf("Generate = %s, %v", doc, err)
	}
	reqs := sb.Requests(t)
	if len(reqs) != 1 || reqs[0].Model != "claude-haiku-5-5" || slices.ContainsFunc(reqs[0].Tools, func(n string) bool {
		return n != "StructuredOutput" && n != "DeferredToolPlaceholder"
	}) {
		t.Errorf("model calls = %+v, want one offering only StructuredOutput", reqs)
	}
}
