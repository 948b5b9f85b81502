package enginetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// RunTurn runs req on e with a fresh RunID and a Recorder as its
// Interaction, for 60 s at most, and returns the turn's result (zero when
// its last output is none), how long Run took and Run's error.
func RunTurn(t *testing.T, e engine.Engine, req engine.Request) (events.Result, time.Duration, error) {
	t.Helper()
	rec := NewRecorder()
	req.RunID, req.Interaction = uuid.NewString(), rec
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	began := time.Now()
	err := e.Run(ctx, req, rec.Emit)
	took := time.Since(began)
	outs := rec.Outputs()
	if len(outs) == 0 {
		return events.Result{}, took, err
	}
	res, _ := outs[len(outs)-1].(events.Result)
	return res, took, err
}
