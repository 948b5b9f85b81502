package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/services/gateway/internal/apierr"
)

func TestConflictErrorNamesThePaths(t *testing.T) {
	var conflicts []snapshot.Conflict
	for i := range maxConflictsNamed + 3 {
		conflicts = append(conflicts, snapshot.Conflict{Path: fmt.Sprintf("f%02d.txt", i), Ours: "changed", Theirs: "deleted"})
	}
	e, ok := apierr.StatusFor(conflictError("s1", conflicts))
	if !ok || e.Status != http.StatusConflict {
		t.Fatalf("conflictError = %+v, want a 409", e)
	}
	for _, want := range []string{"53 conflicting path(s)", "f00.txt (session: changed, project: deleted)", "f49.txt", "; and 3 more"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
	if strings.Contains(e.Message, "f50.txt") {
		t.Errorf("message %q names more than %d paths", e.Message, maxConflictsNamed)
	}
}
