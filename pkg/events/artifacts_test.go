package events

import (
	"strings"
	"testing"
)

func TestRunStateCarriesTheArtifactRevision(t *testing.T) {
	b, err := EncodeOutput(RunState{State: RunRunning, ArtifactRevision: 7})
	if err != nil || !strings.Contains(string(b), `"artifactRevision":7`) {
		t.Fatalf("encode = %s, %v", b, err)
	}
	o, err := DecodeOutput(b)
	if err != nil || o.(RunState).ArtifactRevision != 7 {
		t.Errorf("decode = %+v, %v", o, err)
	}
	if b, _ := EncodeOutput(RunState{State: RunRunning}); strings.Contains(string(b), "artifactRevision") {
		t.Errorf("zero revision not omitted: %s", b)
	}
	if (Caller{TenantID: "t"}).Who().TenantID != "t" || (PlanRequest{Caller: Caller{TenantID: "u"}}).Who().TenantID != "u" {
		t.Error("Who does not return the embedded caller")
	}
}
