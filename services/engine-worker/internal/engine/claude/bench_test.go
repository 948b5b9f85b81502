package claude_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// BenchmarkTurnVsBareCLI measures time to first text and time to the
// turn's result through the adapter and through the bare CLI
// (`claude -p … --output-format stream-json --verbose
// --include-partial-messages`, a new process per turn, as a one-shot host
// runs it), side by side against the same fakellm in the same sandbox.
// Each iteration is one interleaved round per prompt: bare first turn,
// adapter first turn (cold process), bare follow-up (--resume
// --fork-session), adapter follow-up (warm process). Run it with a fixed
// count, e.g.
//
//	go test ./internal/engine/claude -run '^$' -bench TurnVsBareCLI -benchtime 12x
//
// It logs medians and ranges per cell; docs/PERFORMANCE.md has the numbers.
func BenchmarkTurnVsBareCLI(b *testing.B) {
	bin := enginetest.InstalledBin(b, events.EngineClaudeCode)
	sb := enginetest.NewSandbox(b, 30*time.Second)
	state := b.TempDir()
	bare := bareCLI{bin: bin, wrap: sb.Wrap, home: b.TempDir(), base: sb.BaseURL}
	prompts := []string{"hi", "@@TOOL@@ run it"}
	cells := map[string]*cell{}
	get := func(k string) *cell {
		if cells[k] == nil {
			cells[k] = &cell{}
		}
		return cells[k]
	}
	ws := b.TempDir()
	for range b.N {
		for _, prompt := range prompts {
			// One instance per round, disposed after it: warm processes of
			// earlier rounds would otherwise pile up.
			e := claude.New(claude.Config{Process: engine.Process{Bin: bin, StateDir: state, Wrap: sb.Wrap}, Credentials: claude.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineClaudeCode})
			// settle lets the warm process a turn leaves behind start and go
			// idle, so its start-up does not slow the next measurement.
			settle := func() {
				deadline := time.Now().Add(5 * time.Second)
				for e.Warm() == 0 && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(500 * time.Millisecond)
			}
			bt, bs := bare.turn(b, ws, prompt, "")
			get(prompt + "|first|bare").add(bt)
			chat := uuid.NewString()
			at, as := adapterTurn(b, e, ws, chat, prompt, "")
			get(prompt + "|first|adapter").add(at)
			settle()
			bt, _ = bare.turn(b, ws, prompt, bs)
			get(prompt + "|follow-up|bare").add(bt)
			if e.Warm() == 0 {
				b.Fatal("no warm process before the follow-up")
			}
			at, _ = adapterTurn(b, e, ws, chat, prompt, as)
			get(prompt + "|follow-up|adapter").add(at)
			settle()
			_ = e.Dispose(context.Background())
		}
	}
	b.StopTimer()
	var sb2 strings.Builder
	fmt.Fprintf(&sb2, "\nn=%d per cell; ms, median (min-max)\n", b.N)
	fmt.Fprintf(&sb2, "%-16s %-10s %-22s %-22s %-8s %-22s %-22s %-8s\n", "prompt", "turn", "TTFT bare", "TTFT adapter", "diff", "result bare", "result adapter", "diff")
	for _, prompt := range prompts {
		for _, turn := range []string{"first", "follow-up"} {
			bc, ac := get(prompt+"|"+turn+"|bare"), get(prompt+"|"+turn+"|adapter")
			fmt.Fprintf(&sb2, "%-16s %-10s %-22s %-22s %+8.0f %-22s %-22s %+8.0f\n", prompt, turn,
				bc.ttft.String(), ac.ttft.String(), ac.ttft.median()-bc.ttft.median(),
				bc.turn.String(), ac.turn.String(), ac.turn.median()-bc.turn.median())
			key := strings.ReplaceAll(strings.Fields(prompt)[0], "@", "") + "-" + turn
			b.ReportMetric(ac.ttft.median(), key+"-ttft-adapter-ms")
			b.ReportMetric(bc.ttft.median(), key+"-ttft-bare-ms")
		}
	}
	// Printed, not logged: the testing package truncates benchmark logs.
	fmt.Print(sb2.String())
}

// timing is one turn: to the first text delta and to the result.
type timing struct{ ttft, turn time.Duration }

type cell struct{ ttft, turn samples }

func (c *cell) add(t timing) { c.ttft.add(t.ttft); c.turn.add(t.turn) }

type samples []float64

func (s *samples) add(d time.Duration) { *s = append(*s, float64(d.Microseconds())/1000) }

func (s samples) median() float64 {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

func (s samples) String() string {
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f (%.0f-%.0f)", s.median(), slices.Min(s), slices.Max(s))
}

// adapterTurn runs one turn through the adapter, timed from Run to the
// first text delta and to the result.
func adapterTurn(b *testing.B, e *claude.Engine, ws, chat, prompt, resume string) (timing, string) {
	b.Helper()
	rec := enginetest.NewRecorder()
	var res events.Result
	var done time.Duration
	began := time.Now()
	emit := func(o events.Output) error {
		if r, ok := o.(events.Result); ok {
			res, done = r, time.Since(began)
		}
		return rec.Emit(o)
	}
	err := e.Run(context.Background(), engine.Request{Tenant: "t", RunID: uuid.NewString(), SessionID: chat, Workspace: ws,
		Prompt: []events.Block{events.TextBlock{Text: prompt}}, Model: claude.DefaultModel, ResumeSessionID: resume, Interaction: rec}, emit)
	if err != nil || res.Subtype != events.ResultSuccess {
		b.Fatalf("adapter turn %q: %v %+v", prompt, err, res)
	}
	return timing{ttft: rec.FirstTextAt().Sub(began), turn: done}, res.SessionID
}

// bareCLI runs `claude -p` the way a one-shot host does.
type bareCLI struct {
	bin, home, base string
	wrap            []string
}

func (c bareCLI) turn(b *testing.B, ws, prompt, resume string) (timing, string) {
	b.Helper()
	args := append(slices.Clone(c.wrap), c.bin, "-p", prompt, "--output-format", "stream-json", "--verbose",
		"--include-partial-messages", "--model", claude.DefaultModel, "--allowedTools", "Bash")
	if resume != "" {
		args = append(args, "--resume", resume, "--fork-session")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.home, "ANTHROPIC_BASE_URL=" + c.base, "ANTHROPIC_API_KEY=" + claude.PlaceholderKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_MAX_RETRIES=0", "IS_SANDBOX=1"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var t timing
	var session string
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		l, err := claude.DecodeLine(sc.Bytes())
		if err != nil {
			continue
		}
		if t.ttft == 0 && l.Type == "stream_event" && l.Event != nil && l.Event.Delta != nil && l.Event.Delta.Type == "text_delta" {
			t.ttft = time.Since(began)
		}
		if l.Type == "result" {
			t.turn, session = time.Since(began), l.SessionID
		}
	}
	if err := cmd.Wait(); err != nil || session == "" {
		b.Fatalf("bare turn %q: %v (session %q)", prompt, err, session)
	}
	return t, session
}
