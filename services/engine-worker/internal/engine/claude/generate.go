package claude

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

var _ engine.StructuredGenerator = (*Engine)(nil)

// Generate implements engine.StructuredGenerator with the CLI's
// --json-schema, as the pinned 2.1.332 does it: the CLI offers the model one
// tool, StructuredOutput, whose input schema is the request's; the model's
// call ends the turn, and the result line carries the input as
// structured_output (and again as JSON text in result). Nothing else is
// offered (--tools ""), nothing is saved (--no-session-persistence), the
// effort is low, and thinking is off where the model allows it. A result
// without structured_output (the model answered in text twice, and the CLI
// gave up asking) is read with engine.ExtractJSON. The process is the
// instance's like any turn's, so Dispose stops it; ctx ending stops it too.
func (e *Engine) Generate(ctx context.Context, req engine.GenerateRequest) (json.RawMessage, error) {
	cred, err := e.cfg.Credentials.Credential(ctx, e.key.Tenant, e.key.Account)
	if err != nil {
		return nil, err
	}
	if cred, err = e.route(cred, ""); err != nil {
		return nil, err
	}
	d := e.dirs(req.ConfigDir)
	if err := d.make(); err != nil {
		return nil, err
	}
	argv := e.cfg.Argv(generateArgs(cmp.Or(req.Model, DefaultModel), req.Schema)...)
	env := append(environ(d, cred, e.cfg.MaxRetries), e.cfg.Env...)
	confine, err := e.cfg.Sandbox.For(e.key.Tenant, e.cfg.Bin, req.Workspace, cred.BaseURL, d.state()...)
	if err != nil {
		return nil, err
	}
	p, err := startProc(argv, env, req.Workspace, e.cfg.KillGrace, e.cfg.Tap, confine)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindNotInstalled, Msg: "start Claude Code: " + err.Error(), Err: err}
	}
	e.Procs.Use(p)
	defer func() {
		p.Stop(context.Background())
		e.Procs.Drop(p)
	}()
	if err := p.prompt([]map[string]any{{"type": "text", "text": req.Prompt}}); err != nil {
		return nil, &engine.Error{Kind: events.KindCrashed, Msg: "write prompt: " + err.Error(), Err: err}
	}
	for {
		lines, closed := p.lines.Drain()
		for _, b := range lines {
			if l, err := DecodeLine(b); err == nil && l.Type == "result" {
				return structured(l)
			}
		}
		if closed {
			<-p.Done()
			return nil, exitError(p.Err(), p.Stderr())
		}
		select {
		case <-p.lines.Notify():
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// generateArgs is the command line of a structured generation.
func generateArgs(model string, schema json.RawMessage) []string {
	var compact bytes.Buffer
	if json.Compact(&compact, schema) != nil {
		compact.Write(schema) // the caller checked it; the CLI reports anything else
	}
	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--model", model, "--tools", "", "--strict-mcp-config", "--no-session-persistence",
		"--json-schema", compact.String()}
	if m, ok := LookupModel(model); ok && slices.Contains(m.Levels, LevelOff) {
		return append(args, "--thinking", "disabled")
	}
	return append(args, "--effort", LevelLow)
}

// structured reads the document of a generation's result line.
func structured(l Line) (json.RawMessage, error) {
	if err := ResultError(l); err != nil {
		return nil, err
	}
	if Interrupted(l) {
		return nil, engine.ErrInterrupted
	}
	var out bytes.Buffer
	if len(l.StructuredOutput) > 0 && json.Compact(&out, l.StructuredOutput) == nil && out.String() != "null" {
		return out.Bytes(), nil
	}
	doc, err := engine.ExtractJSON(l.Result)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindProvider, Msg: "Claude Code gave no structured output: " + err.Error(), Err: err}
	}
	return doc, nil
}
