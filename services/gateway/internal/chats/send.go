package chats

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/internal/identity"
)

// startAttempts is how many times a send asks streammgr to start its turn
// before it answers that streammgr did not answer in time.
const startAttempts = 2

// Send starts a turn in a session (queued behind an active run). Every start
// carries a client request id — the client's, else one made up here — so
// that repeating it never makes a second turn: a start whose reply is lost
// or late is asked again with the same id, and a send that still gets no
// answer is a 504 naming the id, with which the client finds the turn (GET
// /v1/sessions/{id}/runs) or sends again and gets the same run.
func (c *Chats) Send(ctx context.Context, p identity.Principal, t Turn) (events.StartTurnReply, error) {
	var out events.StartTurnReply
	if err := c.access(ctx, p, t.SessionID); err != nil {
		return out, err
	}
	req := t.StartTurnRequest
	req.Caller = p.Caller()
	if req.ClientRequestID == "" {
		req.ClientRequestID = "gw-" + uuid.NewString()
	}
	for range startAttempts {
		actx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
		err := c.call(actx, events.OpStart, req, &out)
		// Either this attempt's deadline passed, or streammgr says it did
		// (its answer came first).
		var apiErr *events.APIError
		late := actx.Err() != nil || errors.As(err, &apiErr) && apiErr.Status == http.StatusGatewayTimeout
		timedOut := err != nil && late && ctx.Err() == nil
		cancel()
		if !timedOut {
			return out, err
		}
	}
	return out, &events.APIError{Status: http.StatusGatewayTimeout, Code: "timeout", ClientRequestID: req.ClientRequestID,
		Message: fmt.Sprintf("streammgr did not answer in time, and the turn may still start: it carries clientRequestId %q. "+
			"Look for it in GET /v1/sessions/%s/runs, or send again with that clientRequestId, which returns the same run "+
			"instead of starting another", req.ClientRequestID, t.SessionID)}
}
