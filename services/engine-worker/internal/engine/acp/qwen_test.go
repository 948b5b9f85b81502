package acp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A chat Qwen Code saved in another workspace (on another worker) names
// that workspace in every record; before session/load it must name this
// one, or Qwen loads it as empty.
func TestRelocateQwenChat(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	const id = "a9d2656d-e727-4520-9011-da321ee5d34d"
	dir := filepath.Join(qwenProject(home, ws), "chats")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	saved := `{"uuid":"1","parentUuid":null,"sessionId":"` + id + `","type":"user","cwd":"/elsewhere/ws","message":{"role":"user","parts":[{"text":"Remember PEAR."}]}}
{"uuid":"2","parentUuid":"1","sessionId":"` + id + `","type":"assistant","cwd":"/elsewhere/ws"}
`
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, []byte(saved), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := relocateQwenChat(home, "", ws, id); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if strings.Contains(string(got), "/elsewhere/ws") || strings.Count(string(got), `"cwd":"`+ws+`"`) != 2 {
		t.Errorf("relocated chat:\n%s\nwant both records in %s", got, ws)
	}
	if !strings.Contains(string(got), "Remember PEAR.") {
		t.Errorf("relocated chat lost its content:\n%s", got)
	}
	// An id from the agent's output that is not a plain name touches nothing.
	if err := relocateQwenChat(home, "", ws, "../../etc/passwd"); err != nil {
		t.Errorf("relocateQwenChat with a path id = %v, want nil (nothing done)", err)
	}
	if err := relocateQwenChat(home, "", ws, "not-saved-here"); err != nil {
		t.Errorf("relocateQwenChat of a chat not saved here = %v, want nil", err)
	}
}
