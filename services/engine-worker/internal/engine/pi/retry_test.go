package pi

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
)

// TestRetryNotice: pi's auto_retry_start (as the pinned pi sends it, with
// the provider's status before its error body) becomes a warning naming
// the status and the attempt; one without a status keeps pi's words.
func TestRetryNotice(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "auto-retry-start.events"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := []struct{ title, inMessage string }{
		{"pi: HTTP 500 from the provider", "(failure 1)"},
		{"pi: HTTP 429 from the provider", "(failure 2)"},
		{"pi is retrying", "fetch failed"},
	}
	sc := bufio.NewScanner(f)
	for i := 0; sc.Scan(); i++ {
		ev, err := DecodeLine(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		c := Converter{}
		c.SetSession("s1")
		var got *events.Notification
		for _, o := range c.Convert(ev) {
			if n, ok := o.(events.Notification); ok {
				got = &n
			}
		}
		if got == nil || got.Level != events.LevelWarning || got.Title != want[i].title || !strings.Contains(got.Message, want[i].inMessage) {
			t.Errorf("line %d: notice = %+v, want warning %q with %q", i+1, got, want[i].title, want[i].inMessage)
		}
	}
}

// TestWriteSettings: the agent dir's settings.json turns the provider
// SDK's own retries off and keeps every other setting pi saved there.
func TestWriteSettings(t *testing.T) {
	h := home{agentDir: t.TempDir()}
	path := filepath.Join(h.agentDir, "settings.json")
	if err := os.WriteFile(path, []byte(`{"retry":{"enabled":true,"provider":{"timeoutMs":5}},"theme":"dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.writeSettings(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Retry struct {
			Enabled  bool
			Provider struct {
				MaxRetries *int    `json:"maxRetries"`
				TimeoutMs  float64 `json:"timeoutMs"`
			}
		}
		Theme string
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Retry.Provider.MaxRetries == nil || *got.Retry.Provider.MaxRetries != 0 || !got.Retry.Enabled ||
		got.Retry.Provider.TimeoutMs != 5 || got.Theme != "dark" {
		t.Errorf("settings.json = %s", b)
	}
	if err := os.WriteFile(path, []byte(`{not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.writeSettings(); err == nil || !strings.Contains(err.Error(), "settings.json") {
		t.Errorf("writeSettings of a broken file = %v, want an error naming it", err)
	}
}
