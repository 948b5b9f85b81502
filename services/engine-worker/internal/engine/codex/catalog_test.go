package codex_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// cliModel is one model of the app-server's model/list.
type cliModel struct {
	ID                        string   `json:"id"`
	DisplayName               string   `json:"displayName"`
	IsDefault                 bool     `json:"isDefault"`
	InputModalities           []string `json:"inputModalities"`
	DefaultReasoningEffort    string   `json:"defaultReasoningEffort"`
	SupportedReasoningEfforts []struct {
		ReasoningEffort string `json:"reasoningEffort"`
	} `json:"supportedReasoningEfforts"`
}

// modelList asks the pinned CLI's app-server for its model/list.
func modelList(t *testing.T, bin string) []cliModel {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[analytics]\nenabled = false\n[features]\nplugins = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "app-server")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home, "TMPDIR=" + t.TempDir()}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	for _, line := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"clopen-test","version":"1"},"capabilities":null}}`,
		`{"method":"initialized"}`,
		`{"id":2,"method":"model/list","params":{"includeHidden":false}}`,
	} {
		if _, err := stdin.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 4<<20)
	var list struct {
		Result struct {
			Data []cliModel `json:"data"`
		} `json:"result"`
	}
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `{"id":2,`) {
			if err := json.Unmarshal(sc.Bytes(), &list); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(list.Result.Data) == 0 {
		t.Fatal("model/list answered no models")
	}
	return list.Result.Data
}

// bundledContextWindows reads the context windows of the model table baked
// into the CLI binary (a JSON document starting `{\n  "models": [`), which
// model/list does not report.
func bundledContextWindows(t *testing.T, bin string) map[string]int64 {
	t.Helper()
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	marker := []byte("{\n  \"models\": [")
	buf := make([]byte, 8<<20)
	var at int64 = -1
	for off := int64(0); at < 0; off += int64(len(buf) - len(marker)) {
		n, err := f.ReadAt(buf, off)
		if i := bytes.Index(buf[:n], marker); i >= 0 {
			at = off + int64(i)
		} else if err == io.EOF {
			t.Fatal("no model table in the CLI binary")
		} else if err != nil {
			t.Fatal(err)
		}
	}
	var table struct {
		Models []struct {
			Slug          string `json:"slug"`
			ContextWindow int64  `json:"context_window"`
		} `json:"models"`
	}
	if err := json.NewDecoder(io.NewSectionReader(f, at, 64<<20)).Decode(&table); err != nil {
		t.Fatalf("the CLI's model table: %v", err)
	}
	out := map[string]int64{}
	for _, m := range table.Models {
		out[m.Slug] = m.ContextWindow
	}
	return out
}

// TestCatalogMatchesCLI keeps the catalog in step with the pinned CLI: its
// app-server's model/list must list the same models in the same order (the
// default first), with the same names, input modalities, efforts and
// default efforts, and the CLI's bundled model table the same context
// windows.
func TestCatalogMatchesCLI(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	list := modelList(t, bin)
	windows := bundledContextWindows(t, bin)
	describe := func(id, name, def string, efforts, inputs []string, window int64) string {
		return strings.Join([]string{id, name, def, strings.Join(efforts, ","), strings.Join(inputs, ","), strconv.FormatInt(window, 10)}, " | ")
	}
	var got, want []string
	for _, m := range list {
		var efforts []string
		for _, e := range m.SupportedReasoningEfforts {
			efforts = append(efforts, e.ReasoningEffort)
		}
		got = append(got, describe(m.ID, m.DisplayName, m.DefaultReasoningEffort, efforts, m.InputModalities, windows[m.ID]))
	}
	for _, m := range codex.Catalog() {
		var efforts, inputs []string
		for _, l := range m.Capabilities.ReasoningControl.Levels {
			efforts = append(efforts, l.Value)
		}
		for _, in := range m.Modalities.Input {
			inputs = append(inputs, string(in))
		}
		want = append(want, describe(m.ID, m.Name, m.Capabilities.ReasoningControl.Default, efforts, inputs, m.Limit.Input))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the pinned CLI's models:\n%s\nthe catalog:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !list[0].IsDefault || list[0].ID != codex.DefaultModel {
		t.Errorf("the CLI's first model is %s (default %v), DefaultModel %s", list[0].ID, list[0].IsDefault, codex.DefaultModel)
	}
}

// TestModels: the catalog is OpenAI's, every entry encodes and names its
// effort levels with their labels, the default model comes first, and
// another provider has no models.
func TestModels(t *testing.T) {
	e := codex.New(codex.Config{}, engine.Key{Engine: events.EngineCodex})
	ctx := context.Background()
	models, err := e.Models(ctx, engine.CatalogRequest{Tenant: "t1"})
	if err != nil || len(models) != len(codex.Models) || models[0].ID != codex.DefaultModel {
		t.Fatalf("Models = %d models (first %v), %v; want the catalog, %s first", len(models), models, err, codex.DefaultModel)
	}
	for _, m := range models {
		if _, err := json.Marshal(m); err != nil || m.Provider != codex.Provider || m.Cost != nil || m.Limit.Output != 0 {
			t.Errorf("entry %s: %v; want an encodable openai entry without a made-up price or output limit", m.ID, err)
		}
	}
	sol, _ := engine.FindModel(models, "gpt-6.2-sol")
	want := []events.ReasoningLevel{{Value: "low", Label: "Low"}, {Value: "medium", Label: "Medium"}, {Value: "high", Label: "High"},
		{Value: "xhigh", Label: "X-High"}, {Value: "max", Label: "Max"}, {Value: "ultra", Label: "Ultra"}}
	if rc := sol.Capabilities.ReasoningControl; rc == nil || !slices.Equal(rc.Levels, want) || rc.Default != "low" {
		t.Errorf("gpt-6.2-sol reasoning control = %+v, want %v with default low", rc, want)
	}
	if none, err := e.Models(ctx, engine.CatalogRequest{Provider: "anthropic"}); err != nil || none == nil || len(none) != 0 {
		t.Errorf("Models(anthropic) = %v, %v; want an empty list", none, err)
	}
}

// TestEffortOnTheWire: the effort a turn asks for reaches turn/start
// clamped to the model (a stale or foreign level becomes the model's
// default), and the pinned CLI runs the turn with it.
func TestEffortOnTheWire(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	sb := enginetest.NewSandbox(t, 30*time.Second)
	var mu sync.Mutex
	var efforts []string
	tap := func(sent bool, line []byte) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Effort string `json:"effort"`
			} `json:"params"`
		}
		if sent && json.Unmarshal(line, &m) == nil && m.Method == "turn/start" {
			mu.Lock()
			efforts = append(efforts, m.Params.Effort)
			mu.Unlock()
		}
	}
	e := codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: sb.Wrap, Tap: tap}, Credentials: codex.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineCodex})
	defer e.Dispose(context.Background())
	tests := []struct{ model, give, want string }{
		{"gpt-5.5", "xhigh", "xhigh"},
		{"gpt-5.5", "ultra", "medium"},   // a newer model's level
		{"gpt-5.5", "minimal", "medium"}, // a level the CLI dropped
		{"gpt-5.5", "", "medium"},        // none: the model's default
		// fakellm is not OpenAI's endpoint: the code-mode models do not
		// start a turn at all (TestModelsUnavailableOnAnotherEndpoint).
		{"gpt-6.2-sol", "ultra", ""},
	}
	ws, chat := t.TempDir(), uuid.NewString()
	for _, tt := range tests {
		rec := enginetest.NewRecorder()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := e.Run(ctx, engine.Request{Tenant: "t", RunID: uuid.NewString(), SessionID: chat, Workspace: ws, Model: tt.model,
			Effort: tt.give, Prompt: []events.Block{events.TextBlock{Text: "Say hello."}}, Interaction: rec}, rec.Emit)
		cancel()
		outs := rec.Outputs()
		if tt.want == "" {
			mu.Lock()
			n := len(efforts)
			mu.Unlock()
			if engine.KindOf(err) != events.KindModelUnavailable || len(outs) != 0 || n != len(tests)-1 {
				t.Errorf("%s: %v, %d outputs, %d turn/starts; want model_unavailable before any turn", tt.model, err, len(outs), n)
			}
			continue
		}
		if res, ok := outs[len(outs)-1].(events.Result); err != nil || !ok || res.IsError() {
			t.Fatalf("%s at %q: %v, %+v", tt.model, tt.give, err, outs[len(outs)-1])
		}
		mu.Lock()
		got := efforts[len(efforts)-1]
		mu.Unlock()
		if got != tt.want {
			t.Errorf("%s at %q: turn/start effort %q, want %q", tt.model, tt.give, got, tt.want)
		}
	}
}

// TestModelsUnavailableOnAnotherEndpoint: with a model endpoint other than
// OpenAI's, the models Codex sends code-mode tools are marked with the
// reason, the first runnable one (gpt-5.5) is the default, and a turn on a
// marked one fails at once; on OpenAI's endpoint every model is offered.
func TestModelsUnavailableOnAnotherEndpoint(t *testing.T) {
	ctx := context.Background()
	e := codex.New(codex.Config{Process: engine.Process{Bin: "/nonexistent/codex", StateDir: t.TempDir()}, Credentials: codex.EnvCredentials{BaseURL: "http://127.0.0.1:1/v1"}}, engine.Key{Engine: events.EngineCodex})
	models, err := e.Models(ctx, engine.CatalogRequest{Tenant: "t1"})
	if err != nil || len(models) != len(codex.Models) || models[0].ID != "gpt-5.5" || models[0].Unavailable != "" {
		t.Fatalf("Models = %v, %v; want the whole catalog, gpt-5.5 first and available", models, err)
	}
	for _, m := range models[1:] {
		if !strings.Contains(m.Unavailable, "code mode") {
			t.Errorf("%s: unavailable = %q, want the code-mode reason", m.ID, m.Unavailable)
		}
	}
	for _, model := range []string{"gpt-6.2-sol", ""} {
		err = e.Run(ctx, engine.Request{RunID: "r", SessionID: "s", Workspace: t.TempDir(), Model: model,
			Prompt: []events.Block{events.TextBlock{Text: "hi"}}}, func(events.Output) error { return nil })
		if model == "" {
			// No model: the default that runs, so the turn gets as far as
			// starting the (missing) CLI.
			if engine.KindOf(err) == events.KindModelUnavailable {
				t.Errorf("a turn naming no model = %v, want it to run on an available default", err)
			}
			continue
		}
		if engine.KindOf(err) != events.KindModelUnavailable || !strings.Contains(err.Error(), "code mode") {
			t.Errorf("a turn on %s = %v (kind %s), want model_unavailable with the reason", model, err, engine.KindOf(err))
		}
	}

	openai := codex.New(codex.Config{Credentials: codex.EnvCredentials{BaseURL: codex.DefaultBaseURL}}, engine.Key{Engine: events.EngineCodex})
	if models, err := openai.Models(ctx, engine.CatalogRequest{}); err != nil || models[0].ID != codex.DefaultModel || models[0].Unavailable != "" {
		t.Errorf("Models on OpenAI's endpoint = %v, %v; want %s first, available", models, err, codex.DefaultModel)
	}
}
