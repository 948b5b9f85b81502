package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// SlowResult is what a WebSocket client that stops reading costs the
// gateway, and how it is let go.
type SlowResult struct {
	FramesSent         int     `json:"frames_published_to_its_session"`
	GatewayRSSGrowthMB float64 `json:"gateway_rss_growth_mb"`
	Disconnected       bool    `json:"disconnected"`
	Reason             string  `json:"bye_reason"`
	ByeCursor          uint64  `json:"bye_cursor"`
}

// slowClient joins a session with a raw WebSocket, never reads, and runs a
// long turn into it: the gateway must queue a bounded amount, then say bye
// with a resume cursor and close.
func slowClient(ctx context.Context, sys *System, tn tenant) (SlowResult, error) {
	var res SlowResult
	s, err := tn.c.CreateSession(ctx, tn.project, api.CreateSession{Model: "scripted/bench?deltas=20000&chunk=8&delay=100us"})
	if err != nil {
		return res, err
	}
	key := tn.key
	url := strings.Replace(sys.URL, "http", "ws", 1) + "/v1/ws"
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		return res, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"id":"j","op":"join","session":"`+s.ID+`"}`)); err != nil {
		return res, err
	}
	rss0 := sys.Sample()["gateway"].RSSBytes
	r, err := tn.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "flood"})
	if err != nil {
		return res, err
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		run, err := tn.c.Run(ctx, r.RunID)
		if err == nil && run.State.Terminal() {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // past the gateway's slow grace
	res.GatewayRSSGrowthMB = float64(sys.Sample()["gateway"].RSSBytes-rss0) / (1 << 20)
	res.FramesSent = 20000
	// Now read what the socket holds: the bye frame, then the close.
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, b, err := conn.Read(rctx)
		if err != nil {
			res.Disconnected = websocket.CloseStatus(err) != -1
			return res, nil
		}
		var f events.ServerFrame
		if json.Unmarshal(b, &f) == nil && f.Type == events.WSFrameBye {
			res.Reason, res.ByeCursor = f.Reason, f.Cursor
		}
	}
}
