package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
)

func (h *harness) art(op string, req, resp any) {
	h.t.Helper()
	subject, _ := events.ServiceSubject(events.ArtifactsService, op)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := svc.Call(h.as(ctx, req), h.nc, subject, req, resp); err != nil {
		h.t.Fatalf("artifacts %s: %v", op, err)
	}
}

// TestArtifactsReachTheRun runs a scripted turn whose plan holds a skill, a
// slash skill, a subagent, global instructions and a deny rule, and checks
// them on disk in the engine's config dir and in the run's events: the
// preamble and the memory file the engine reports, the expanded /slash
// prompt, a Bash call denied by the rule, and the artifact revision on the
// run.
func TestArtifactsReachTheRun(t *testing.T) {
	dir := t.TempDir()
	h := start(t, Config{Dir: dir})
	tn := newTenant()
	h.art(events.OpSkillsPut, events.SkillPut{Caller: tn.Caller, Skill: events.Skill{Slug: "review",
		Description: "Reviews changes before they land.", Body: "Review carefully."}}, nil)
	h.art(events.OpSkillsPut, events.SkillPut{Caller: tn.Caller, Skill: events.Skill{Slug: "greet",
		Description: "Greets someone.", Triggers: []string{"slash"}, Body: "Say hello to $1."}}, nil)
	h.art(events.OpSubagentsPut, events.SubagentPut{Caller: tn.Caller, Subagent: events.Subagent{Slug: "tester",
		Description: "Writes and runs tests.", Body: "You write tests."}}, nil)
	h.art(events.OpInstructionsPut, events.InstructionsPut{Caller: tn.Caller, Instructions: events.Instructions{
		Scope: events.ScopeGlobal, Content: "Always answer in English.", Enabled: true}}, nil)
	h.art(events.OpPermissionsPut, events.PermissionsPut{Caller: tn.Caller, Set: events.PermissionSet{Scope: events.ScopeGlobal,
		PermissionRules: events.PermissionRules{Deny: []string{"Bash"}}}}, nil)
	var rev events.RevisionReply
	h.art(events.OpRevision, events.ListRequest{Caller: tn.Caller}, &rev)

	s := h.session(tn, "scripted/artifacts")
	feed := h.follow(tn.TenantID, s.ID, 0)
	reply := h.send(tn, s.ID, "/greet Ada")
	feed.waitFor(t, 20*time.Second, finished(reply.RunID))
	run := h.waitRunState(tn, reply.RunID, events.RunCompleted)

	// On disk, in the session's isolated config dir.
	cfgDir := filepath.Join(dir, "engine-config", tn.TenantID, "sessions", s.ID, "scripted", "default")
	agents := readFile(t, filepath.Join(cfgDir, "AGENTS.md"))
	if !strings.Contains(agents, "<!-- CLOPEN:INSTRUCTIONS:START — managed block, do not edit -->\nAlways answer in English.") {
		t.Errorf("AGENTS.md lacks the instructions block:\n%s", agents)
	}
	for _, f := range []string{".clopen/skills/review/SKILL.md", ".clopen/skills/greet/SKILL.md"} {
		if _, err := os.Stat(filepath.Join(cfgDir, f)); err != nil {
			t.Errorf("%s not materialised: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, tn.TenantID, tn.project, "sessions", s.ID, "AGENTS.md")); err == nil {
		t.Error("artifacts were written into the workspace")
	}

	// In the run's events.
	var report string
	var bashResult *events.ToolResultBlock
	var bashID string
	var revision int64
	for _, env := range h.runEventsOnBus(tn.TenantID, reply.RunID) {
		switch o := env.Output.(type) {
		case events.Notification:
			if o.Title == "Artifacts" {
				report = o.Message
			}
		case events.RunState:
			if o.State == events.RunRunning {
				revision = o.ArtifactRevision
			}
		case events.AssistantMessage:
			for _, b := range o.Content {
				if tu, ok := b.(events.ToolUseBlock); ok && tu.Name == "Bash" {
					bashID = tu.ID
				}
			}
		case events.UserMessage:
			for _, b := range o.Content {
				if tr, ok := b.(events.ToolResultBlock); ok && tr.ToolUseID == bashID && bashID != "" {
					bashResult = &tr
				}
			}
		}
	}
	for _, want := range []string{
		"# Available Skills", "**review** — Reviews changes before they land.", cfgDir + "/.clopen/skills/review/SKILL.md",
		"# Available Subagents", "**tester** — Writes and runs tests.",
		"Say hello to Ada.", "`/greet Ada`",
		"--- AGENTS.md ---", "Always answer in English.",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("the engine's report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "**greet**") || strings.Contains(report, events.ConfigDirToken) {
		t.Errorf("slash-only skill advertised, or an unresolved config dir token:\n%s", report)
	}
	if bashResult == nil || !bashResult.IsError || !strings.Contains(bashResult.Content, "denied by this project's permissions") {
		t.Errorf("Bash result = %+v, want an error denied by this project's permissions", bashResult)
	}
	if revision != rev.Revision || run.ArtifactRevision == nil || *run.ArtifactRevision != rev.Revision {
		t.Errorf("revision on the running state %d, on the run %v; want %d", revision, run.ArtifactRevision, rev.Revision)
	}

	// The saved user message keeps what the user typed.
	var msgs []events.MessageRow
	h.must(events.OpMessagesList, events.MessageList{Caller: tn.Caller, SessionID: s.ID}, &msgs)
	if len(msgs) == 0 || !strings.Contains(string(msgs[0].Message), `"/greet Ada"`) || strings.Contains(string(msgs[0].Message), "Say hello") {
		t.Errorf("saved user message = %s", msgs[0].Message)
	}

	// A change makes the next run use the next revision, and the disk follows.
	h.art(events.OpInstructionsPut, events.InstructionsPut{Caller: tn.Caller, Instructions: events.Instructions{
		Scope: events.ScopeGlobal, Content: "Answer in French.", Enabled: true}}, nil)
	second := h.send(tn, s.ID, "again")
	feed.waitFor(t, 20*time.Second, finished(second.RunID))
	run2 := h.waitRunState(tn, second.RunID, events.RunCompleted)
	if run2.ArtifactRevision == nil || *run2.ArtifactRevision != rev.Revision+1 {
		t.Errorf("second run revision = %v, want %d", run2.ArtifactRevision, rev.Revision+1)
	}
	if agents := readFile(t, filepath.Join(cfgDir, "AGENTS.md")); !strings.Contains(agents, "Answer in French.") || strings.Contains(agents, "English") {
		t.Errorf("AGENTS.md after the change:\n%s", agents)
	}
}

// storeReport is a scripted scenario that waits a moment after the run's
// plan is applied, then reports two skills of the canonical store: long
// enough for another run's plan, applied meanwhile to a shared dir, to
// show.
const storeReport = `{"name": "store", "steps": [
  {"sleep": "1s"},
  {"report": {"files": [".clopen/skills/alpha/SKILL.md", ".clopen/skills/beta/SKILL.md"]}}
]}`

// side is one of two projects of a tenant whose turns run at once: its
// session admits one skill and its project has its own instructions.
type side struct {
	skill, other, project, words string
	session                      events.Session
	run                          string
}

// twoProjects makes the skills alpha and beta, and two projects of tn,
// each with its own instructions and a session (of model on engine) whose
// profile admits one of the skills, then starts a turn in each at once
// ("Report on <skill>.") and waits for both to complete.
func (h *harness) twoProjects(tn tenant, engine events.EngineType, model string) []*side {
	h.t.Helper()
	sides := []*side{{skill: "alpha", other: "beta", project: tn.project}, {skill: "beta", other: "alpha", project: uuid.NewString()}}
	for _, sd := range sides {
		h.art(events.OpSkillsPut, events.SkillPut{Caller: tn.Caller, Skill: events.Skill{Slug: sd.skill,
			Description: "The " + sd.skill + " skill.", Body: "Follow the " + sd.skill + " rules."}}, nil)
	}
	for _, sd := range sides {
		sd.words = "Always mention " + strings.ToUpper(sd.skill) + "."
		h.art(events.OpInstructionsPut, events.InstructionsPut{Caller: tn.Caller, Instructions: events.Instructions{
			Scope: events.ScopeProject, ProjectID: sd.project, Content: sd.words, Enabled: true}}, nil)
		var prof events.Profile
		h.art(events.OpProfilesPut, events.ProfilePut{Caller: tn.Caller, Profile: events.Profile{Name: "Only " + sd.skill,
			Items: []events.ProfileItem{{Type: events.ArtifactSkill, Ref: sd.skill}}}}, &prof)
		h.must(events.OpSessionCreate, events.SessionCreate{Caller: tn.Caller, ProjectID: sd.project, Engine: engine, Model: model,
			ProfileID: prof.ID}, &sd.session)
	}
	for _, sd := range sides {
		sd.run = h.send(tenant{Caller: tn.Caller, project: sd.project}, sd.session.ID, "Report on "+sd.skill+".").RunID
	}
	for _, sd := range sides {
		h.waitRunState(tn, sd.run, events.RunCompleted)
	}
	return sides
}

// TestConcurrentProjectsKeepTheirOwnContent runs turns of two projects of
// one tenant at the same moment, each in a session of its own profile
// (one admits the skill alpha, the other beta) with its own project
// instructions, and checks that each turn's engine read only its own
// run's content from its config dir and prompt: a config dir shared by
// the tenant's runs gives one of them the other's skills.
func TestConcurrentProjectsKeepTheirOwnContent(t *testing.T) {
	dir := t.TempDir()
	cfg := withScenarios(t, dir, map[string]string{"store": storeReport})
	h := start(t, Config{Dir: dir, Worker: cfg})
	tn := newTenant()
	for _, sd := range h.twoProjects(tn, "", "scripted/store") {
		var report string
		for _, env := range h.runEventsOnBus(tn.TenantID, sd.run) {
			if n, ok := env.Output.(events.Notification); ok && n.Title == "Artifacts" {
				report = n.Message
			}
		}
		mine := "--- .clopen/skills/" + sd.skill + "/SKILL.md ---\n"
		theirs := "--- .clopen/skills/" + sd.other + "/SKILL.md ---\n(missing)"
		if !strings.Contains(report, mine) || strings.Contains(report, mine+"(missing)") || !strings.Contains(report, theirs) {
			t.Errorf("the %s session's engine read another run's skills:\n%s", sd.skill, report)
		}
		if !strings.Contains(report, sd.words) || strings.Contains(report, "Always mention "+strings.ToUpper(sd.other)) {
			t.Errorf("the %s session's prompt lacks its project's instructions or has the other's:\n%s", sd.skill, report)
		}
	}
}

// TestConcurrentProjectsModelRequests runs the turns of
// TestConcurrentProjectsKeepTheirOwnContent on the real pi and Claude
// Code, which read their skills and memory file from the config dir, and
// checks what reached the model: each turn's requests carry the tenant's
// global instructions (read from the memory file) and, for pi, its own
// skill in their context, and nothing of the other project. (Claude Code
// sends the prompt preamble, which holds the project's instructions, as a
// text block fakellm does not record.)
func TestConcurrentProjectsModelRequests(t *testing.T) {
	// Claude Code lists skills in its Skill tool's description, which
	// fakellm does not record; pi lists them in its system prompt.
	for typ, skillsInContext := range map[events.EngineType]bool{events.EnginePi: true, events.EngineClaudeCode: false} {
		t.Run(string(typ), func(t *testing.T) {
			setup, llm := engineSetup(t, typ)
			h := start(t, Config{Engines: setup})
			h.waitEngines([]events.EngineType{typ})
			tn := newTenant()
			h.art(events.OpInstructionsPut, events.InstructionsPut{Caller: tn.Caller, Instructions: events.Instructions{
				Scope: events.ScopeGlobal, Content: "Write in British English.", Enabled: true}}, nil)
			for _, sd := range h.twoProjects(tn, typ, "") {
				var seen int
				for _, r := range llm.Requests() {
					prompt := strings.Join(r.UserTurns, "\n")
					if !strings.Contains(prompt, "Report on "+sd.skill+".") {
						continue
					}
					seen++
					context := strings.Join(r.Context, "\n")
					wants := []string{"Write in British English."}
					if skillsInContext {
						wants = append(wants, "The "+sd.skill+" skill.")
					}
					for _, want := range wants {
						if !strings.Contains(context, want) {
							t.Errorf("a model request of the %s session lacks %q in its context", sd.skill, want)
						}
					}
					if strings.Contains(context, "The "+sd.other+" skill.") || strings.Contains(prompt+context, "Always mention "+strings.ToUpper(sd.other)) {
						t.Errorf("a model request of the %s session carries the %s project's content", sd.skill, sd.other)
					}
				}
				if seen == 0 {
					t.Errorf("no model request of the %s session", sd.skill)
				}
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
