package enginetest

import (
	"strings"
	"testing"
)

func TestTranscriptScrubbed(t *testing.T) {
	var tr transcript
	tr.tap(true, []byte(`{"cwd":"/tmp/ws1","url":"http://127.0.0.1:4711/v1"}`+"\n"))
	tr.tap(false, []byte(`{"home":"/tmp/st2/home"}`+"\n"))
	tr.tap(false, []byte("Debugger listening\n"))
	tr.tap(false, []byte("\n"))
	b, dropped := tr.scrubbed("/tmp/ws1", "/tmp/st2", "http://127.0.0.1:4711")
	want := `{"_sent": {"cwd":"/workspace","url":"http://fakellm/v1"}}` + "\n" + `{"home":"/state/home"}` + "\n"
	if string(b) != want || dropped != 2 {
		t.Fatalf("transcript %q (%d dropped), want %q (2 dropped)", b, dropped, want)
	}
	if strings.Contains(string(b), "Debugger") {
		t.Fatal("a line that is not JSON was kept")
	}
}
