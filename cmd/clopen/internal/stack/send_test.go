package stack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
)

// TestASendThatTimesOutMakesOneFindableTurn: streammgr answers a send's
// start only after the gateway gave up waiting (the session's row is held
// meanwhile, as a slow transaction would). The gateway asks twice with the
// same client request id it made up, answers 504 naming that id, the
// client finds the run by it and a retry with it returns the same run:
// exactly one turn, over REST and over the WebSocket.
func TestASendThatTimesOutMakesOneFindableTurn(t *testing.T) {
	gc := gateway.DefaultConfig()
	gc.StartTimeout = 500 * time.Millisecond
	h := start(t, Config{Gateway: &gc})
	a := h.account("slowstart")
	ctx := context.Background()
	ws, err := a.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, tt := range []struct {
		name string
		send func(session string, m api.SendMessage) (events.StartTurnReply, error)
	}{
		{"rest", func(s string, m api.SendMessage) (events.StartTurnReply, error) { return a.c.SendMessage(ctx, s, m) }},
		{"websocket", func(s string, m api.SendMessage) (events.StartTurnReply, error) { return ws.Send(ctx, s, m) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Model: "scripted/hello"})
			if err != nil {
				t.Fatal(err)
			}
			var starts atomic.Int32 // start requests for this session, as they cross the bus
			sub, err := h.nc.Subscribe("svc.streammgr."+events.OpStart, func(m *nats.Msg) {
				var req events.StartTurnRequest
				if json.Unmarshal(m.Data, &req) == nil && req.SessionID == s.ID {
					starts.Add(1)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sub.Unsubscribe() }()
			hold, err := h.st.DB.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hold.Exec(ctx, `SELECT 1 FROM streammgr.chat_sessions WHERE id = $1 FOR UPDATE`, s.ID); err != nil {
				t.Fatal(err)
			}
			_, err = tt.send(s.ID, api.SendMessage{Text: "hello"})
			_ = hold.Rollback(ctx) // streammgr goes on with every start it was asked
			var apiErr *events.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != http.StatusGatewayTimeout {
				t.Fatalf("send while streammgr is stuck = %v, want 504", err)
			}
			id := apiErr.ClientRequestID
			if id == "" || !strings.Contains(apiErr.Message, id) || !strings.Contains(apiErr.Message, "/runs") {
				t.Fatalf("the 504 (%+v) does not say how to find the turn: want its clientRequestId, in the message too", apiErr)
			}
			if n := starts.Load(); n != 2 {
				t.Errorf("the gateway asked streammgr %d times, want twice", n)
			}
			again, err := tt.send(s.ID, api.SendMessage{Text: "hello", ClientRequestID: id})
			if err != nil {
				t.Fatalf("retry with the clientRequestId: %v", err)
			}
			runs, err := a.c.Runs(ctx, s.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 1 || runs[0].ID != again.RunID || runs[0].ClientRequestID != id || again.ClientRequestID != id {
				t.Errorf("runs = %+v, retry = %+v; want one run, the retry's, carrying clientRequestId %q", runs, again, id)
			}
		})
	}
}
