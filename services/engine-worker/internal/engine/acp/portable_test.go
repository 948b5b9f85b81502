package acp

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Gemini CLI's chats of a workspace are under the slug its registry gives
// the workspace, else under the slug it would claim: the slug of the
// workspace's last element.
func TestGeminiSlug(t *testing.T) {
	home := t.TempDir()
	ws := "/srv/workspaces/t1/p1/sessions/0B7F3a1c-Chat_ID"
	if got := geminiSlug(home, ws); got != "0b7f3a1c-chat-id" {
		t.Errorf("slug of an unregistered workspace = %q, want 0b7f3a1c-chat-id", got)
	}
	if got := geminiSlug(home, "/srv/__/"); got != "project" {
		t.Errorf("slug of a workspace with no letters = %q, want project", got)
	}
	reg := `{"projects":{"` + ws + `":"0b7f3a1c-chat-id-1","/other":"../../escape"}}`
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "projects.json"), []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := geminiSlug(home, ws); got != "0b7f3a1c-chat-id-1" {
		t.Errorf("slug of a registered workspace = %q, want the registry's 0b7f3a1c-chat-id-1", got)
	}
	// A registry entry that is not a slug (the agent writes the registry)
	// names no directory outside .gemini/tmp.
	if got := geminiSlug(home, "/other"); got != "other" {
		t.Errorf("slug of a workspace registered as a path = %q, want other", got)
	}
}

// newOpenCodeDB makes a database with OpenCode's session columns holding
// one session in directory.
func newOpenCodeDB(t *testing.T, path, directory string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`PRAGMA journal_mode = WAL`,
		`CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT NOT NULL, path TEXT)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO session VALUES ('ses_1', ?, ?), ('ses_2', ?, 'sub')`,
		directory, directory[1:], directory); err != nil {
		t.Fatal(err)
	}
}

func sessionDirs(t *testing.T, path string) map[string][2]string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, directory, path FROM session`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string][2]string{}
	for rows.Next() {
		var id, dir, rel string
		if err := rows.Scan(&id, &dir, &rel); err != nil {
			t.Fatal(err)
		}
		got[id] = [2]string{dir, rel}
	}
	return got
}

// A chat's OpenCode database restored from another worker names that
// worker's workspace; before the session is reopened it names this one.
func TestRelocateOpenCodeChat(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	const chat = "5b31bb3c-1c47-4566-9388-cec539d5c40d"
	path := filepath.Join(openCodeChatDir(home, chat), "opencode.db")
	newOpenCodeDB(t, path, "/elsewhere/sessions/"+chat)
	if err := relocateOpenCodeChat(home, chat, ws, "ses_1"); err != nil {
		t.Fatal(err)
	}
	got := sessionDirs(t, path)
	if got["ses_1"] != [2]string{ws, ws[1:]} || got["ses_2"] != [2]string{ws, "sub"} {
		t.Errorf("relocated sessions = %v, want both in %s (ses_1's path %s, ses_2's kept)", got, ws, ws[1:])
	}
	// A chat with no database here, and a chat id that is a path, touch
	// nothing.
	if err := relocateOpenCodeChat(home, "not-here", ws, "ses_1"); err != nil {
		t.Errorf("relocating a chat with no database = %v, want nil", err)
	}
	if err := relocateOpenCodeChat(home, "../..", ws, "ses_1"); err != nil {
		t.Errorf("relocating chat ../.. = %v, want nil (nothing done)", err)
	}
}

// The agent writes its home: a database it replaced with a link to a file
// outside the home (another tenant's database) is refused, and that file
// is not written.
func TestRelocateOpenCodeChatRefusesLinks(t *testing.T) {
	home, ws, outside := t.TempDir(), t.TempDir(), t.TempDir()
	const chat = "c1"
	victim := filepath.Join(outside, "opencode.db")
	newOpenCodeDB(t, victim, "/victim/ws")
	dir := openCodeChatDir(home, chat)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "opencode.db")); err != nil {
		t.Fatal(err)
	}
	if err := relocateOpenCodeChat(home, chat, ws, "ses_1"); err == nil {
		t.Error("relocating through a linked database succeeded, want an error")
	}
	// The chat's directory itself a link out of the home.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	if err := relocateOpenCodeChat(home, chat, ws, "ses_1"); err == nil {
		t.Error("relocating through a linked chat directory succeeded, want an error")
	}
	if got := sessionDirs(t, victim); got["ses_1"][0] != "/victim/ws" || got["ses_2"][0] != "/victim/ws" {
		t.Errorf("the database outside the home was changed: %v", got)
	}
}

// A chat's Cline sessions restored from another worker name that worker's
// workspace and home, in their files and in their database rows; before
// the session is reopened they name this worker's.
func TestRelocateClineChat(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	const chat, id = "6b2b7e40", "1796438073003_UIRm0_cli"
	dir := clineChatDir(home, chat)
	file := filepath.Join(dir, "sessions", id, id+".json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	saved := `{"version":1,"session_id":"` + id + `","cwd":"/a/ws","workspace_root":"/a/ws","messages_path":"/a/home/x.messages.json","prompt":"Remember PEAR."}`
	if err := os.WriteFile(file, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "db", "sessions.db")
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE sessions (session_id TEXT PRIMARY KEY, cwd TEXT NOT NULL, workspace_root TEXT NOT NULL, messages_path TEXT)`,
		`INSERT INTO sessions VALUES ('` + id + `', '/a/ws', '/a/ws', '/a/home/x.messages.json')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := relocateClineChat(home, chat, ws, id); err != nil {
		t.Fatal(err)
	}
	messages := filepath.Join(dir, "sessions", id, id+".messages.json")
	var got struct {
		Cwd, WorkspaceRoot, MessagesPath, Prompt string
	}
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &struct {
		Cwd           *string `json:"cwd"`
		WorkspaceRoot *string `json:"workspace_root"`
		MessagesPath  *string `json:"messages_path"`
		Prompt        *string `json:"prompt"`
	}{&got.Cwd, &got.WorkspaceRoot, &got.MessagesPath, &got.Prompt}); err != nil {
		t.Fatal(err)
	}
	if got.Cwd != ws || got.WorkspaceRoot != ws || got.MessagesPath != messages || got.Prompt != "Remember PEAR." {
		t.Errorf("relocated session file = %+v, want cwd and workspace_root %s, messages_path %s, the prompt kept", got, ws, messages)
	}
	var cwd, root, mp string
	if err := db.QueryRow(`SELECT cwd, workspace_root, messages_path FROM sessions`).Scan(&cwd, &root, &mp); err != nil {
		t.Fatal(err)
	}
	if cwd != ws || root != ws || mp != messages {
		t.Errorf("relocated row = %s %s %s, want %s %s %s", cwd, root, mp, ws, ws, messages)
	}
	// A session file the agent replaced with a link out of its home is
	// refused, and the file it links to is not written.
	outside := filepath.Join(t.TempDir(), "victim.json")
	if err := os.WriteFile(outside, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, file); err != nil {
		t.Fatal(err)
	}
	if err := relocateClineChat(home, chat, ws, id); err == nil {
		t.Error("relocating through a linked session file succeeded, want an error")
	}
	if b, _ := os.ReadFile(outside); string(b) != saved {
		t.Errorf("the file outside the home was changed:\n%s", b)
	}
}

// Only the files of the chat's own Copilot session are carried, without
// the locks of the process that had it open.
func TestCopilotSessionFile(t *testing.T) {
	const id = "a2e88d72-a110-49cc-9261-56b5f5d68c8d"
	m := copilotSessionFile(id)
	for rel, want := range map[string]bool{
		id: true, id + "/events.jsonl": true, id + "/workspace.yaml": true, id + "/checkpoints/index.md": true,
		id + "/inuse.27979.lock": false, id + "/inuse.27979.hold": false, "other-session/events.jsonl": false,
		".session-operation-locks/" + id + ".lock": false, id + "x/events.jsonl": false,
	} {
		if got := m(rel); got != want {
			t.Errorf("match(%q) = %v, want %v", rel, got, want)
		}
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if copilotSessionFile(bad)(bad + "/events.jsonl") {
			t.Errorf("session id %q matched a file", bad)
		}
	}
}

// An agent that unpacks itself into the shared cache on first run (Copilot)
// gets the cache filled by the worker, once, and opened to the confined
// agent's uid; a failing command is reported and tried again.
func TestPrimeCache(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "agent")
	runs := filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho run >> " + runs + "\n[ -f " + filepath.Join(dir, "fail") + " ] && { echo broken >&2; exit 3; }\n" +
		"mkdir -p \"$XDG_CACHE_HOME/agent/pkg\" && echo unpacked > \"$XDG_CACHE_HOME/agent/pkg/index\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fail"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := primeCache(t.Context(), bin, []string{"--version"}, cache); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("primeCache of a failing command = %v, want its error with its output", err)
	}
	if err := os.Remove(filepath.Join(dir, "fail")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := primeCache(t.Context(), bin, []string{"--version"}, cache); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(cache, "agent", "pkg", "index")); err != nil || string(b) != "unpacked\n" {
		t.Errorf("the cache holds %q, %v; want the unpacked package", b, err)
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 2 {
		t.Errorf("the command ran %d times, want 2 (the failure, then once)", strings.Count(string(b), "run"))
	}
	if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("cache dir mode = %v, %v; want 0755", fi.Mode().Perm(), err)
	}
}

// FuzzGeminiSlug: whatever the agent left in its registry and whatever the
// workspace is called, the slug names one directory below .gemini/tmp.
func FuzzGeminiSlug(f *testing.F) {
	f.Add(`{"projects":{"/w/s/abc":"abc-1"}}`, "/w/s/abc")
	f.Add(`{"projects":{"/w/s/abc":"../../x"}}`, "/w/s/abc")
	f.Add(`{"projects":[]}`, "/w/../..")
	f.Add(`not json`, "/")
	f.Fuzz(func(t *testing.T, registry, workspace string) {
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".gemini", "projects.json"), []byte(registry), 0o600); err != nil {
			t.Fatal(err)
		}
		slug := geminiSlug(home, workspace)
		if !geminiSlugChars.MatchString(slug) {
			t.Fatalf("geminiSlug(%q, %q) = %q, not a slug", registry, workspace, slug)
		}
	})
}
