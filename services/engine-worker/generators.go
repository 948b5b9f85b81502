package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/pkg/platform/svc"
)

// maxDiffBytes is how much of a diff a generator quotes to the model.
const maxDiffBytes = 48 << 10

// generator is a built-in structured generation: its schema (OpenAI strict
// mode: closed objects, every property required), how it builds the prompt,
// and what it does to the answer.
type generator struct {
	schema string
	// changes says the prompt is built from a session's changes (input,
	// optional, adds to it); otherwise input is required.
	changes bool
	prompt  func(input, changes string) string
	finish  func(doc json.RawMessage) (json.RawMessage, error)
}

// generators are the built-in generators by name.
var generators = map[string]generator{
	events.GenerateCommitMessage: {
		schema:  `{"type":"object","additionalProperties":false,"required":["message"],"properties":{"message":{"type":"string","description":"the whole commit message"}}}`,
		changes: true,
		prompt: func(input, changes string) string {
			return "Write the git commit message for the changes below: a summary line of at most 72 characters in the " +
				"imperative mood, then, if the change needs it, a blank line and a short body saying why." + extra(input) + "\n\n" + changes
		},
	},
	events.GenerateBranchName: {
		schema:  `{"type":"object","additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string","description":"a short git branch name"}}}`,
		changes: true,
		prompt: func(input, changes string) string {
			return "Name a git branch for the work below: lower case, words joined by hyphens, at most 40 characters, " +
				"optionally prefixed with a kind such as feat/ or fix/." + extra(input) + "\n\n" + changes
		},
		finish: func(doc json.RawMessage) (json.RawMessage, error) {
			var v struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(doc, &v); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]string{"name": BranchName(v.Name)})
		},
	},
	events.ArtifactSkill: {
		schema: `{"type":"object","additionalProperties":false,"required":["name","description","body"],"properties":{` +
			`"name":{"type":"string","description":"lower-case words joined by hyphens"},` +
			`"description":{"type":"string","description":"one sentence: what the skill does and when to use it"},` +
			`"body":{"type":"string","description":"the SKILL.md instructions, in Markdown"}}}`,
		prompt: func(input, _ string) string {
			return "Draft an agent skill (a SKILL.md: a name, a one-sentence description saying when to use it, and " +
				"Markdown instructions an AI coding agent follows) for this purpose:\n\n" + input
		},
	},
	events.ArtifactSubagent: {
		schema: `{"type":"object","additionalProperties":false,"required":["name","description","body"],"properties":{` +
			`"name":{"type":"string","description":"lower-case words joined by hyphens"},` +
			`"description":{"type":"string","description":"when the main agent should delegate to this subagent"},` +
			`"body":{"type":"string","description":"the subagent's system prompt, in Markdown"}}}`,
		prompt: func(input, _ string) string {
			return "Draft a subagent an AI coding agent can delegate to (a name, a description of when to delegate, and " +
				"its system prompt in Markdown) for this purpose:\n\n" + input
		},
	},
	events.ArtifactInstruction: {
		schema: `{"type":"object","additionalProperties":false,"required":["content"],"properties":{` +
			`"content":{"type":"string","description":"the instructions, in Markdown"}}}`,
		prompt: func(input, _ string) string {
			return "Draft standing instructions (Markdown, as in a CLAUDE.md or AGENTS.md) that every AI coding agent " +
				"working here follows, for this purpose:\n\n" + input
		},
	},
}

func extra(input string) string {
	if input = strings.TrimSpace(input); input == "" {
		return ""
	}
	return "\nAlso take this into account: " + input
}

// generation is what one generate request runs: schema, prompt, the
// directory the engine runs in, and the answer's finishing touch.
type generation struct {
	schema  json.RawMessage
	prompt  string
	dir     string
	cleanup func()
	finish  func(json.RawMessage) (json.RawMessage, error)
}

// plan builds the generation of req: a built-in generator's, or the
// request's own schema and prompt. Every generation runs in an empty
// scratch dir of the tenant's: the generators of changes read them from the
// snapshot store, never from a workspace the agent could have written.
func (w *Worker) plan(ctx context.Context, req events.GenerateRequest) (generation, error) {
	g := generation{cleanup: func() {}, finish: func(d json.RawMessage) (json.RawMessage, error) { return d, nil }}
	var input string
	switch gen, ok := generators[req.Generator]; {
	case req.Generator == "":
		if len(req.Schema) == 0 || strings.TrimSpace(req.Prompt) == "" {
			return g, svc.Invalid("a generation needs a generator, or a schema and a prompt")
		}
		g.schema, input = req.Schema, req.Prompt
	case !ok:
		return g, svc.Invalid("unknown generator %q (have %s)", req.Generator, strings.Join(generatorNames(), ", "))
	case len(req.Schema) > 0 || req.Prompt != "":
		return g, svc.Invalid("generator %s brings its own schema and prompt", req.Generator)
	case gen.changes:
		changes, err := w.sessionChanges(ctx, req)
		if err != nil {
			return g, err
		}
		g.schema, g.prompt = json.RawMessage(gen.schema), gen.prompt(req.Input, changes)
	default:
		if strings.TrimSpace(req.Input) == "" {
			return g, svc.Invalid("generator %s needs an input: what the draft is for", req.Generator)
		}
		g.schema, g.prompt = json.RawMessage(gen.schema), gen.prompt(req.Input, "")
	}
	if gen := generators[req.Generator]; gen.finish != nil {
		g.finish = gen.finish
	}
	if g.prompt == "" {
		g.prompt = input
	}
	if g.dir == "" {
		base := filepath.Join(w.cfg.Workspaces, req.TenantID)
		if err := os.MkdirAll(base, 0o700); err != nil {
			return g, fmt.Errorf("scratch dir: %w", err)
		}
		dir, err := os.MkdirTemp(base, ".generate-")
		if err != nil {
			return g, fmt.Errorf("scratch dir: %w", err)
		}
		g.dir, g.cleanup = dir, func() { _ = os.RemoveAll(dir) }
	}
	return g, nil
}

func generatorNames() []string {
	return []string{events.GenerateCommitMessage, events.GenerateBranchName, events.ArtifactSkill, events.ArtifactSubagent, events.ArtifactInstruction}
}

// sessionChanges describes a session's changes for a generator: the files
// changed from snapshot From to To, with line counts, then the unified
// diff of the text files, cut at maxDiffBytes. Both snapshots are read
// from the store as the caller's tenant. No git runs: a repository in the
// workspace is the agent's, and its config (core.fsmonitor, filters) would
// run commands on this host.
func (w *Worker) sessionChanges(ctx context.Context, req events.GenerateRequest) (string, error) {
	if err := events.ValidToken(req.SessionID); err != nil {
		return "", svc.Invalid("generator %s needs the session whose changes to describe", req.Generator)
	}
	if req.To == "" {
		return "", svc.Invalid("session %s has no files yet", req.SessionID)
	}
	snaps := w.snapshots(req.TenantID)
	var from, to *snapshot.Manifest
	var err error
	if req.From != "" {
		if from, err = snaps.Load(ctx, req.From); err != nil {
			return "", snapshotError(req.From, err)
		}
	}
	if to, err = snaps.Load(ctx, req.To); err != nil {
		return "", snapshotError(req.To, err)
	}
	changes := snapshot.Diff(from, to, workspaceTree)
	if len(changes) == 0 {
		return "", svc.Invalid("session %s has no changes", req.SessionID)
	}
	if err := snaps.CountLines(ctx, from, to, workspaceTree, changes); err != nil {
		return "", err
	}
	patch, err := snaps.Patch(ctx, from, to, workspaceTree, maxDiffBytes)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("changed files:\n")
	for _, c := range changes {
		fmt.Fprintf(&b, "%s %s", c.Kind, c.Path)
		if c.Binary {
			b.WriteString(" (binary)\n")
			continue
		}
		fmt.Fprintf(&b, " (+%d -%d)\n", c.Added, c.Removed)
	}
	b.WriteString("\ndiff:\n" + patch.Text)
	if patch.Truncated {
		b.WriteString("\n[diff cut: more files changed than shown]\n")
	}
	return b.String(), nil
}

// snapshotError says a snapshot the request names cannot be read: a bad
// or unknown id is the request's fault.
func snapshotError(id string, err error) error {
	if errors.Is(err, snapshot.ErrNotFound) {
		return svc.NotFound("snapshot %s not found", id)
	}
	return fmt.Errorf("snapshot %s: %w", id, err)
}

// BranchName turns a model's suggestion into a valid git branch name (git
// check-ref-format --branch): lower case; anything but letters, digits, .,
// _, - and / becomes -; no empty, dot-led or .lock components, no "..", no
// leading -, at most 60 bytes; "changes" when nothing is left.
func BranchName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '/', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, strings.TrimSpace(s))
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	clean := func(p string) string {
		for strings.Contains(p, "--") {
			p = strings.ReplaceAll(p, "--", "-")
		}
		p = strings.Trim(p, ".-")
		for strings.HasSuffix(p, ".lock") {
			p = strings.Trim(strings.TrimSuffix(p, ".lock"), ".-")
		}
		return p
	}
	var parts []string
	size := 0
	for _, p := range strings.Split(s, "/") {
		if p = clean(p); p == "" {
			continue
		}
		if size+len(p) > 60 {
			if p = clean(p[:max(0, 60-size)]); p != "" {
				parts = append(parts, p)
			}
			break
		}
		parts = append(parts, p)
		size += len(p) + 1
	}
	if len(parts) == 0 {
		return "changes"
	}
	return strings.Join(parts, "/")
}
