package engine_test

import (
	"strconv"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
)

func TestRoute(t *testing.T) {
	api := engine.ModelAPI{DefaultURL: "https://api.anthropic.com", Scheme: modelproxy.AnthropicKey, Secret: "sk-ant-real", Engine: "Claude Code"}
	t.Run("unconfined: the credential as it is", func(t *testing.T) {
		var sb *engine.Sandboxing
		r, err := sb.Route("t", "chat-a", api)
		if err != nil || r.Token != "sk-ant-real" || r.BaseURL != "" || r.Meter != nil {
			t.Errorf("got %+v, %v", r, err)
		}
	})
	pool := &modelproxy.Pool{Dir: t.TempDir()}
	t.Cleanup(pool.Close)
	sb := &engine.Sandboxing{Proxies: pool}
	t.Run("confined: the proxy's address and the chat's placeholder", func(t *testing.T) {
		r, err := sb.Route("t", "chat-a", api)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Token, "sk-ant-real") || !strings.HasPrefix(r.Token, modelproxy.TokenPrefix) ||
			!strings.HasPrefix(r.BaseURL, "http://127.0.0.1:") || r.Meter == nil {
			t.Errorf("got %+v", r)
		}
		again, _ := sb.Route("t", "chat-a", api)
		if again != r {
			t.Errorf("the same chat and credential got %+v, then %+v", r, again)
		}
		other, _ := sb.Route("t", "chat-b", api)
		if other.BaseURL != r.BaseURL || other.Token == r.Token || other.Meter == r.Meter {
			t.Errorf("another chat of the tenant got %+v; want the same proxy with its own placeholder and meter of %+v", other, r)
		}
		conf, err := sb.For("t", "/bin/true", t.TempDir(), r.BaseURL)
		if err != nil {
			t.Fatal(err)
		}
		if len(conf.Spec.Endpoints) != 1 || !strings.HasPrefix(conf.Spec.Endpoints[0].Socket, pool.Dir) ||
			"http://127.0.0.1:"+strconv.Itoa(conf.Spec.Endpoints[0].Port) != r.BaseURL {
			t.Errorf("endpoints %+v for %s", conf.Spec.Endpoints, r.BaseURL)
		}
	})
	t.Run("a login the proxy cannot carry is refused, not handed over", func(t *testing.T) {
		_, err := sb.Route("t", "chat-a", engine.ModelAPI{Secret: "ghp_token", Scheme: modelproxy.Bearer, Engine: "GitHub Copilot CLI"})
		if err == nil || engine.KindOf(err) != events.KindNeedsAccount || !strings.Contains(err.Error(), "GitHub Copilot CLI") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("no secret: nothing to keep", func(t *testing.T) {
		r, err := sb.Route("t", "chat-a", engine.ModelAPI{BaseURL: "http://127.0.0.1:9/v1"})
		if err != nil || r.BaseURL != "http://127.0.0.1:9/v1" || r.Meter != nil {
			t.Errorf("got %+v, %v", r, err)
		}
	})
}
