package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
)

// maxDiffBytes is how much of a diff a generator quotes to the model.
const maxDiffBytes = 48 << 10

// generator is a built-in structured generation: its schema (OpenAI strict
// mode: closed objects, every property required), how it builds the prompt,
// and what it does to the answer.
type generator struct {
	schema string
	// git says the prompt is built from the project workspace's changes
	// (input, optional, adds to it); otherwise input is required.
	git    bool
	prompt func(input, changes string) string
	finish func(doc json.RawMessage) (json.RawMessage, error)
}

// generators are the built-in generators by name.
var generators = map[string]generator{
	events.GenerateCommitMessage: {
		schema: `{"type":"object","additionalProperties":false,"required":["message"],"properties":{"message":{"type":"string","description":"the whole commit message"}}}`,
		git:    true,
		prompt: func(input, changes string) string {
			return "Write the git commit message for the changes below: a summary line of at most 72 characters in the " +
				"imperative mood, then, if the change needs it, a blank line and a short body saying why." + extra(input) + "\n\n" + changes
		},
	},
	events.GenerateBranchName: {
		schema: `{"type":"object","additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string","description":"a short git branch name"}}}`,
		git:    true,
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
// request's own schema and prompt. Git generators run in the project's
// workspace; everything else in an empty scratch dir of the tenant's.
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
	case gen.git:
		if err := events.ValidToken(req.ProjectID); err != nil || strings.ContainsAny(req.ProjectID, `/\`) {
			return g, svc.Invalid("generator %s needs the project", req.Generator)
		}
		g.dir = filepath.Join(w.cfg.Workspaces, req.TenantID, req.ProjectID)
		changes, err := gitChanges(ctx, g.dir)
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

// gitChanges describes a workspace's changes for a generator: git status,
// then the staged diff, or the unstaged one when nothing is staged, cut at
// maxDiffBytes. A workspace that is not a repository, or has no changes,
// is an invalid request that says so.
func gitChanges(ctx context.Context, dir string) (string, error) {
	if _, err := os.Stat(dir); err != nil {
		return "", svc.Invalid("the project's workspace has no files yet")
	}
	if _, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree"); err != nil {
		return "", svc.Invalid("the project's workspace is not a git repository")
	}
	status, err := git(ctx, dir, "status", "--porcelain=v1", "--untracked-files=all")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(status) == "" {
		return "", svc.Invalid("the project's workspace has no changes")
	}
	diff, err := git(ctx, dir, "diff", "--cached", "--no-color", "--no-ext-diff")
	if err == nil && strings.TrimSpace(diff) == "" {
		diff, err = git(ctx, dir, "diff", "--no-color", "--no-ext-diff")
	}
	if err != nil {
		return "", err
	}
	if len(diff) > maxDiffBytes {
		diff = fmt.Sprintf("%s\n[diff cut: %d more bytes]", diff[:maxDiffBytes], len(diff)-maxDiffBytes)
	}
	return "git status:\n" + status + "\ngit diff:\n" + diff, nil
}

// git runs a read-only git command in dir with no user or system config.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.quotepath=off", "-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0", "LANG=C"}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", args[0], err)
	}
	return string(out), nil
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
