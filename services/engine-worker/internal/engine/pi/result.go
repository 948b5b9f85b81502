package pi

import "clopen.dev/pkg/events"

// end is agent_end: the turn's result.
func (c *Converter) end() {
	if c.ended {
		return
	}
	c.ended = true
	c.closeStream()
	r := events.Result{SessionID: c.session, NumTurns: max(c.calls, 1), TotalCostUSD: c.cost, Usage: c.usage}
	switch {
	case c.aborted:
		r.Subtype, r.Errors = events.ResultErrorDuringExecution, []string{interruptedText}
	case c.lastError != "":
		r.Subtype, r.Errors = events.ResultErrorDuringExecution, []string{c.lastError}
	default:
		r.Subtype, r.StopReason = events.ResultSuccess, string(events.StopEndTurn)
	}
	c.add(r)
}

// Err is the classified error of a failed turn, nil otherwise.
func (c *Converter) Err() error {
	if !c.ended || c.aborted || c.lastError == "" {
		return nil
	}
	return turnError(c.lastError)
}
