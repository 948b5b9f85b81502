package streammgr

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/svc"
)

func TestPromptPipelineExpandsSlashSkillsThroughArtifacts(t *testing.T) {
	nc, _ := natstest.Connect(t, natstest.Start(t))
	signer, _ := testKeys.DispatchSigner()
	m := &Manager{nc: nc, log: logging.Discard(), bus: bus{runs: signer}}
	tn := turn{Tenant: "t", User: "u", Project: "p", Profile: "prof", Engine: events.EngineCodex}
	typed := []events.Block{events.TextBlock{Text: "/review-pr 12"}}

	// No artifacts service: the prompt goes as typed.
	if got := m.buildEnginePrompt(context.Background(), tn, typed); got[0].(events.TextBlock).Text != "/review-pr 12" {
		t.Errorf("without artifacts = %v", got)
	}
	var calls atomic.Int32
	var asked events.ExpandRequest
	var claims bustoken.Claims
	s, err := micro.AddService(nc, micro.Config{Name: "artifacts", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := svc.NewServer(t.Context(), nc, s, testKeys.Verifier())
	defer srv.Stop()
	subject, _ := events.ServiceSubject(events.ArtifactsService, events.OpExpand)
	err = s.AddEndpoint("expand", srv.Bind(svc.Handler(nil, func(ctx context.Context, req events.ExpandRequest) (events.ExpandReply, error) {
		calls.Add(1)
		asked = req
		claims, _ = svc.ClaimsFrom(ctx)
		text := req.Prompt[0].(events.TextBlock).Text
		if !strings.HasPrefix(text, "/review-pr") {
			return events.ExpandReply{Prompt: req.Prompt}, nil
		}
		return events.ExpandReply{Prompt: events.Blocks{events.TextBlock{Text: "Review PR #12."}}, ExpandedSkill: "review-pr"}, nil
	}), bustoken.Dispatch), micro.WithEndpointSubject(subject))
	if err != nil {
		t.Fatal(err)
	}
	got := m.buildEnginePrompt(context.Background(), tn, typed)
	if got[0].(events.TextBlock).Text != "Review PR #12." {
		t.Errorf("expanded = %v", got)
	}
	if typed[0].(events.TextBlock).Text != "/review-pr 12" {
		t.Error("the typed prompt (the saved message) was modified")
	}
	if asked.TenantID != "t" || asked.ProjectID != "p" || asked.ProfileID != "prof" || asked.Engine != events.EngineCodex {
		t.Errorf("expand request = %+v", asked)
	}
	// streammgr's own dispatch token, not a caller's (a queued prompt is
	// expanded long after its caller left).
	if claims.Kind != bustoken.Dispatch || claims.TenantID != "t" || claims.ProjectID != "p" || claims.Engine != "codex" {
		t.Errorf("expand token claims = %+v", claims)
	}
	// Prompts that cannot be an invocation cost no request.
	before := calls.Load()
	for _, text := range []string{"hello", "see /usr/bin", "/", "/Upper"} {
		m.buildEnginePrompt(context.Background(), tn, []events.Block{events.TextBlock{Text: text}})
	}
	if calls.Load() != before {
		t.Errorf("%d requests for prompts that are no invocation", calls.Load()-before)
	}
}
