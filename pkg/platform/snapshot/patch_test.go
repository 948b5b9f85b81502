package snapshot

import (
	"context"
	"strings"
	"testing"
)

func TestPatch(t *testing.T) {
	ctx := context.Background()
	s, m1, m2 := changedPair(t)
	p, err := s.Patch(ctx, m1, m2, "workspace", 0)
	if err != nil || p.Truncated {
		t.Fatalf("Patch = %+v, %v", p, err)
	}
	for _, want := range []string{
		"--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n",
		"Binary files a/logo.png and b/logo.png differ\n",
		"--- a/main.go\n+++ b/main.go\n@@ -1,5 +1,7 @@\n package main\n \n func main() {\n-\tprintln(1)\n+\tprintln(2)\n+\tprintln(3)\n+\tprintln(4)\n }\n",
		"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n",
	} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("patch lacks %q:\n%s", want, p.Text)
		}
	}
	if strings.Contains(p.Text, "same.txt") {
		t.Errorf("patch shows the unchanged same.txt:\n%s", p.Text)
	}

	// A cap cuts at a file boundary and says so.
	cut, err := s.Patch(ctx, m1, m2, "workspace", len(p.Text)-1)
	if err != nil || !cut.Truncated || !strings.HasPrefix(p.Text, cut.Text) || strings.Contains(cut.Text, "new.txt") {
		t.Errorf("capped Patch = %+v, %v", cut, err)
	}
	// From nothing, everything is added.
	all, err := s.Patch(ctx, nil, m1, "workspace", 0)
	if err != nil || strings.Count(all.Text, "--- /dev/null") != 3 || !strings.Contains(all.Text, "Binary files /dev/null and b/logo.png differ") {
		t.Errorf("Patch(nil, m1) = %+v, %v", all, err)
	}
}
