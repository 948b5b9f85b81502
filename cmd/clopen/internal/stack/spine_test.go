package stack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr"
)

func TestTurnEndToEnd(t *testing.T) {
	h := start(t, Config{})
	tn := newTenant()
	s := h.session(tn, "scripted/tools")
	feed := h.follow(tn.TenantID, s.ID, 0)
	reply := h.send(tn, s.ID, "What is in this project?")
	if reply.Queued || reply.RunID == "" || reply.UserMessageRowID == "" {
		t.Fatalf("start reply = %+v", reply)
	}
	evs := feed.waitFor(t, 20*time.Second, finished(reply.RunID))
	got := strings.Join(types(evs), " ")

	// The turn as a client sees it, in order.
	for _, want := range []string{
		"chat:message:user chat:run-state:claimed chat:run-state:running",
		"chat:partial:start chat:partial:update",
		"chat:partial:end chat:message:reasoning",
		"chat:message:assistant chat:message:user",
		"chat:complete chat:run-state:completed chat:stream-finished",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("chat events lack %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "chat:complete chat:run-state:completed chat:stream-finished") {
		t.Errorf("turn does not end with complete, completed, stream-finished: %s", got)
	}
	// Partial frames carry deltas only; their text adds up to the saved text.
	// Each saved message is pushed once, with its parent row id (the first
	// has none; a stop
	// reason backfilled from the result rewrites the row only).
	var deltas, saved strings.Builder
	rows := map[string]bool{}
	for _, ev := range evs {
		switch d := ev.Data.(type) {
		case events.ChatPartial:
			if !d.Reasoning {
				deltas.WriteString(d.DeltaText)
			}
		case events.ChatMessage:
			if rows[d.MessageRowID] || (d.ParentMessageRowID == "") != (len(rows) == 0) {
				t.Errorf("chat:message %s pushed again or without its parent row id (%q)", d.MessageRowID, d.ParentMessageRowID)
				continue
			}
			rows[d.MessageRowID] = true
			if a, ok := d.Message.(events.AssistantMessage); ok {
				for _, b := range a.Content {
					if tb, ok := b.(events.TextBlock); ok {
						saved.WriteString(tb.Text)
					}
				}
			}
		}
	}
	// Chat events go out before their batch commits; wait for the commit.
	h.waitRunState(tn, reply.RunID, events.RunCompleted)
	if deltas.String() != saved.String() || deltas.Len() == 0 {
		t.Errorf("deltas %q != saved assistant text %q", deltas.String(), saved.String())
	}

	// The database holds exactly the events the worker sent: same count, same
	// order, no duplicates.
	published := h.runEventsOnBus(tn.TenantID, reply.RunID)
	var stored []events.StoredEvent
	h.must(events.OpRunEvents, events.RunEvents{Caller: tn.Caller, RunID: reply.RunID, Limit: 1000}, &stored)
	if len(stored) != len(published)+1 { // + the user message streammgr recorded at epoch 0
		t.Fatalf("stored %d events, published %d (+1 user message)", len(stored), len(published))
	}
	for i, env := range published {
		ev := stored[i+1]
		if ev.Epoch != env.Epoch || ev.Seq != env.Seq || ev.Type != env.Output.OutputType() {
			t.Fatalf("stored event %d = %d/%d %s, published %d/%d %s", i, ev.Epoch, ev.Seq, ev.Type, env.Epoch, env.Seq, env.Output.OutputType())
		}
	}

	var msgs []events.MessageRow
	h.must(events.OpMessagesList, events.MessageList{Caller: tn.Caller, SessionID: s.ID}, &msgs)
	if len(msgs) != len(rows) {
		t.Errorf("%d saved messages, %d distinct chat:message rows", len(msgs), len(rows))
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].ParentRowID != msgs[i-1].RowID {
			t.Fatalf("message %d's parent is not the previous message: the DAG is not a chain", i)
		}
	}
	var run events.Run
	h.must(events.OpRunGet, events.RunRef{Caller: tn.Caller, RunID: reply.RunID}, &run)
	if run.State != events.RunCompleted || run.Usage == nil || run.Usage.InputTokens != 1200 || run.CostUSD == nil ||
		*run.CostUSD != 0.0042 || run.EngineSessionID == "" || run.FirstOutputAt == nil || run.EndedAt == nil {
		t.Errorf("run = %+v", run)
	}
	var sess events.Session
	h.must(events.OpSessionGet, events.SessionRef{Caller: tn.Caller, SessionID: s.ID}, &sess)
	if sess.ActiveRunID != "" || sess.MessageCount != len(msgs) || sess.HeadTitle != "What is in this project?" ||
		sess.HeadSummary == "" || sess.HeadMessageID != msgs[len(msgs)-1].RowID || sess.Title == "" {
		t.Errorf("session = %+v", sess)
	}
}

// waitRunState waits until the run's committed state is want.
func (h *harness) waitRunState(tn tenant, run string, want events.RunStateName) events.Run {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var r events.Run
	for time.Now().Before(deadline) {
		h.must(events.OpRunGet, events.RunRef{Caller: tn.Caller, RunID: run}, &r)
		if r.State == want {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("run %s is %s, want %s", run, r.State, want)
	return r
}

// runEventsOnBus reads a run's events from the EVENTS stream, retrying while
// the bus is unavailable (a fault test may have just stopped a server).
func (h *harness) runEventsOnBus(tenant, run string) []events.Envelope {
	h.t.Helper()
	var out []events.Envelope
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if out, err = h.readRunEvents(tenant, run); err == nil {
			return out
		}
	}
	h.t.Fatalf("read run %s from EVENTS: %v", run, err)
	return nil
}

// readRunEvents reads a run's events through one ordered consumer's message
// iterator. The iterator keeps its consumer from one message to the next,
// and when a pull finds no responder or the consumer is lost, it makes a new
// one that resumes after the last message read. Next on the consumer itself
// makes a new consumer for every message and returns the first
// no-responders: on a cluster that has just lost a server, one pull in a few
// dozen found none, so a read of a hundred messages almost never finished.
func (h *harness) readRunEvents(tenant, run string) ([]events.Envelope, error) {
	subject, _ := events.EventsSubject(tenant, run)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := h.js.Stream(ctx, events.StreamEvents)
	if err != nil {
		return nil, err
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return nil, err
	}
	n := info.State.Subjects[subject]
	if n == 0 {
		return nil, nil
	}
	// A test that polls a run's events reads them several times a second;
	// each read's consumer goes once it is idle for a few seconds, not
	// after the client's default of five minutes, by when a few engines'
	// polls would pass the stream's cap of 1,000 consumers.
	c, err := h.js.OrderedConsumer(ctx, events.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject},
		InactiveThreshold: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	it, err := c.Messages()
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	var out []events.Envelope
	for read := uint64(0); read < n; read++ {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("message %d of %d: %w", read+1, n, err)
		}
		env, err := events.DecodeEnvelope(m.Data())
		if err != nil {
			return nil, err
		}
		if env.Seq == 0 { // streammgr's own, placed by the router
			continue
		}
		out = append(out, env)
	}
	return out, nil
}

func TestSecondPromptWaitsForTheActiveRun(t *testing.T) {
	h := start(t, Config{})
	tn := newTenant()
	s := h.session(tn, "scripted/slow?delay=2ms")
	feed := h.follow(tn.TenantID, s.ID, 0)
	first := h.send(tn, s.ID, "first")
	second := h.send(tn, s.ID, "second")
	if first.Queued || !second.Queued || second.UserMessageRowID != "" {
		t.Fatalf("replies = %+v, %+v; want the second queued", first, second)
	}
	evs := feed.waitFor(t, 30*time.Second, finished(second.RunID))
	firstDone, secondUser := -1, -1
	for i, ev := range evs {
		if ev.Type == events.ChatTypeStreamFinished && ev.RunID == first.RunID {
			firstDone = i
		}
		if m, ok := ev.Data.(events.ChatMessage); ok && ev.RunID == second.RunID && m.Message.OutputType() == events.TypeUser {
			secondUser = i
		}
	}
	if firstDone < 0 || secondUser < firstDone {
		t.Errorf("second prompt's message at %d, first run finished at %d: it must start after", secondUser, firstDone)
	}
	var msgs []events.MessageRow
	h.must(events.OpMessagesList, events.MessageList{Caller: tn.Caller, SessionID: s.ID}, &msgs)
	users := 0
	for _, m := range msgs {
		if strings.Contains(string(m.Message), `"second"`) {
			users++
		}
	}
	if users != 1 {
		t.Errorf("the queued prompt was saved %d times, want once", users)
	}
	h.waitRunState(tn, second.RunID, events.RunCompleted)
	h.checkTimings(tn, s.ID)
}

// checkTimings checks that every run of session has its timings in order:
// queued ≤ dispatched ≤ claimed ≤ first output ≤ ended.
func (h *harness) checkTimings(tn tenant, session string) {
	h.t.Helper()
	var runs []events.Run
	h.must(events.OpRunsList, events.RunList{Caller: tn.Caller, SessionID: session}, &runs)
	for _, r := range runs {
		seq := []*time.Time{&r.QueuedAt, r.DispatchedAt, r.ClaimedAt, r.FirstOutputAt, r.EndedAt}
		names := []string{"queued", "dispatched", "claimed", "first output", "ended"}
		last := 0
		for i := 1; i < len(seq); i++ {
			if seq[i] == nil {
				continue
			}
			if seq[i].Before(*seq[last]) {
				h.t.Errorf("run %s: %s at %s is before %s at %s", r.ID, names[i], seq[i].Format(time.RFC3339Nano),
					names[last], seq[last].Format(time.RFC3339Nano))
			}
			last = i
		}
	}
}

// TestCancelOneRunLeavesTheOtherUntouched runs two turns side by side in one
// project, 100 times over two workers, and cancels one of each pair: the
// other must finish with every event, every time.
func TestCancelOneRunLeavesTheOtherUntouched(t *testing.T) {
	if testing.Short() {
		t.Skip("100 pairs of runs")
	}
	h := start(t, Config{Workers: 2})
	tn := newTenant()
	const pairs, parallel = 100, 10
	// Both runs of every pair run at once: the tenant may run them all.
	if err := streammgr.SetTenantLimits(context.Background(), h.st.DB, tn.TenantID,
		streammgr.TenantLimits{MaxConcurrent: ptr(2 * parallel)}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, pairs)
	sem := make(chan struct{}, parallel)
	for i := range pairs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- h.cancelPair(tn, i)
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			t.Error(err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d pairs had collateral damage", failed, pairs)
	}
}

func (h *harness) cancelPair(tn tenant, i int) error {
	// The run to cancel streams for 24 s, so that on a loaded machine it is
	// still running when the cancel reaches its worker (at 2 ms a delta it
	// could complete first, and rightly so; at 20 ms, 8 s, three pairs in a
	// hundred did, on two cores kept busy by other builds). The cancel ends
	// it early, so the pair takes no longer.
	a := h.session(tn, "scripted/slow?delay=60ms")
	b := h.session(tn, "scripted/slow?delay=2ms")
	fa, fb := h.follow(tn.TenantID, a.ID, 0), h.follow(tn.TenantID, b.ID, 0)
	ra, rb := h.send(tn, a.ID, fmt.Sprint("a", i)), h.send(tn, b.ID, fmt.Sprint("b", i))
	fa.waitFor(h.t, 20*time.Second, runState(ra.RunID, events.RunRunning))
	fb.waitFor(h.t, 20*time.Second, runState(rb.RunID, events.RunRunning))
	var rep events.ControlReply
	if err := h.call(events.OpCancel, events.RunControl{Caller: tn.Caller, SessionID: a.ID}, &rep); err != nil || !rep.Accepted {
		return fmt.Errorf("pair %d: cancel = %+v, %v", i, rep, err)
	}
	evA := fa.waitFor(h.t, 20*time.Second, finished(ra.RunID))
	evB := fb.waitFor(h.t, 30*time.Second, finished(rb.RunID))
	if !has(evA, runState(ra.RunID, events.RunCancelled)) || !has(evA, func(e events.ChatEvent) bool { return e.Type == events.ChatTypeCancelled }) {
		return fmt.Errorf("pair %d: cancelled run's events: %s", i, summarize(evA))
	}
	if !has(evB, runState(rb.RunID, events.RunCompleted)) || has(evB, func(e events.ChatEvent) bool { return e.Type == events.ChatTypeCancelled }) {
		return fmt.Errorf("pair %d: the other run was touched: %s", i, summarize(evB))
	}
	var text strings.Builder
	for _, ev := range evB {
		if p, ok := ev.Data.(events.ChatPartial); ok {
			text.WriteString(p.DeltaText)
		}
	}
	if want := strings.Repeat("This answer takes a while to stream, one word at a time, so there is time to interrupt or cancel it. ", 20); text.String() != want {
		return fmt.Errorf("pair %d: the other run's text is incomplete (%d of %d bytes)", i, text.Len(), len(want))
	}
	return nil
}

func has(evs []events.ChatEvent, match func(events.ChatEvent) bool) bool {
	for _, ev := range evs {
		if match(ev) {
			return true
		}
	}
	return false
}

func TestInterruptKeepsTheSessionUsableCancelStopsHard(t *testing.T) {
	h := start(t, Config{})
	tn := newTenant()
	s := h.session(tn, "scripted/slow?delay=5ms")
	feed := h.follow(tn.TenantID, s.ID, 0)

	r1 := h.send(tn, s.ID, "stream slowly")
	feed.waitFor(t, 10*time.Second, func(ev events.ChatEvent) bool {
		p, ok := ev.Data.(events.ChatPartial)
		return ok && ev.RunID == r1.RunID && p.EventType == events.PartialUpdate
	})
	var rep events.ControlReply
	h.must(events.OpInterrupt, events.RunControl{Caller: tn.Caller, SessionID: s.ID}, &rep)
	evs := feed.waitFor(t, 10*time.Second, finished(r1.RunID))
	var complete *events.ChatComplete
	for _, ev := range evs {
		if c, ok := ev.Data.(events.ChatComplete); ok && ev.RunID == r1.RunID {
			complete = &c
		}
	}
	if complete == nil || complete.StopReason != "interrupted" || !has(evs, runState(r1.RunID, events.RunCompleted)) {
		t.Fatalf("interrupt did not end the turn as interrupted: %s", summarize(evs))
	}
	if !hasInterruptedText(evs, r1.RunID) {
		t.Error("the interrupted turn's partial text was not saved with stop reason interrupted")
	}

	// The session goes on.
	h.waitRunState(tn, r1.RunID, events.RunCompleted)
	r2 := h.send(tn, s.ID, "and again")
	if r2.Queued {
		t.Fatal("the session still had an active run after the interrupt")
	}
	feed.waitFor(t, 10*time.Second, func(ev events.ChatEvent) bool {
		p, ok := ev.Data.(events.ChatPartial)
		return ok && ev.RunID == r2.RunID && p.EventType == events.PartialUpdate
	})
	h.must(events.OpCancel, events.RunControl{Caller: tn.Caller, SessionID: s.ID}, &rep)
	if !rep.Accepted {
		t.Fatalf("cancel reply = %+v", rep)
	}
	evs = feed.waitFor(t, 10*time.Second, finished(r2.RunID))
	if !has(evs, runState(r2.RunID, events.RunCancelling)) || !has(evs, runState(r2.RunID, events.RunCancelled)) ||
		!has(evs, func(e events.ChatEvent) bool { return e.Type == events.ChatTypeCancelled && e.RunID == r2.RunID }) {
		t.Fatalf("cancel did not go cancelling → cancelled: %s", summarize(evs))
	}
	if !hasInterruptedText(evs, r2.RunID) {
		t.Error("the cancelled turn's partial text was not saved as an interrupted message")
	}
	for _, r := range []string{r1.RunID, r2.RunID} {
		if open := openPartials(evs, r); open != "" {
			t.Errorf("run %s ended with its partial stream open (%s): %s", r, open, summarize(evs))
		}
	}
	h.waitRunState(tn, r2.RunID, events.RunCancelled)
}

// openPartials names the chat:partial streams of run that started and had
// not ended when the run finished ("" when none).
func openPartials(evs []events.ChatEvent, run string) string {
	open := map[bool]bool{}
	for _, ev := range evs {
		if ev.RunID != run {
			continue
		}
		if ev.Type == events.ChatTypeStreamFinished {
			break
		}
		if p, ok := ev.Data.(events.ChatPartial); ok {
			switch p.EventType {
			case events.PartialStart:
				open[p.Reasoning] = true
			case events.PartialEnd:
				open[p.Reasoning] = false
			}
		}
	}
	var names []string
	if open[true] {
		names = append(names, "reasoning")
	}
	if open[false] {
		names = append(names, "text")
	}
	return strings.Join(names, ", ")
}

func hasInterruptedText(evs []events.ChatEvent, run string) bool {
	return has(evs, func(ev events.ChatEvent) bool {
		m, ok := ev.Data.(events.ChatMessage)
		if !ok || ev.RunID != run {
			return false
		}
		a, ok := m.Message.(events.AssistantMessage)
		return ok && a.StopReason == events.StopInterrupted && len(a.Content) > 0
	})
}

// parkOnQuestion starts a scripted turn of tn that parks on a question,
// and returns once the question is announced.
func (h *harness) parkOnQuestion(tn tenant) (events.Session, events.StartTurnReply, string, *chatFeed) {
	h.t.Helper()
	s := h.session(tn, "scripted/ask")
	feed := h.follow(tn.TenantID, s.ID, 0)
	r := h.send(tn, s.ID, "set up the service")
	evs := feed.waitFor(h.t, 10*time.Second, runState(r.RunID, events.RunAwaitingInput))
	var toolUse string
	for _, ev := range evs {
		if rs, ok := ev.Data.(events.ChatRunState); ok && rs.State == events.RunAwaitingInput {
			toolUse = rs.ToolUseID
		}
	}
	if toolUse == "" || !has(evs, func(e events.ChatEvent) bool { return e.Type == events.ChatTypeWaitingInput }) {
		h.t.Fatalf("no parked question announced: %s", summarize(evs))
	}
	return s, r, toolUse, feed
}

func TestAskUserQuestionParksUntilAnswered(t *testing.T) {
	h := start(t, Config{})
	tn, other := newTenant(), newTenant()
	s, r, toolUse, feed := h.parkOnQuestion(tn)
	answers := map[string]string{"Which database should the service use?": "SQLite"}
	var rep events.ControlReply
	var apiErr *events.APIError
	err := h.call(events.OpAnswer, events.AnswerRequest{Caller: tn.Caller, SessionID: s.ID, ToolUseID: "toolu_bogus", Answers: answers}, &rep)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict || !strings.Contains(apiErr.Message, "toolu_bogus") {
		t.Errorf("answer to an unknown tool use = %v, want a 409 naming it", err)
	}
	err = h.call(events.OpAnswer, events.AnswerRequest{Caller: other.Caller, SessionID: s.ID, ToolUseID: toolUse, Answers: answers}, &rep)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Errorf("answer from another tenant = %v, want 404", err)
	}
	h.must(events.OpAnswer, events.AnswerRequest{Caller: tn.Caller, SessionID: s.ID, ToolUseID: toolUse, Answers: answers}, &rep)
	evs := feed.waitFor(t, 10*time.Second, finished(r.RunID))
	if !has(evs, runState(r.RunID, events.RunCompleted)) {
		t.Fatalf("run did not complete after the answer: %s", summarize(evs))
	}
	if !has(evs, func(ev events.ChatEvent) bool {
		m, ok := ev.Data.(events.ChatMessage)
		if !ok {
			return false
		}
		u, ok := m.Message.(events.UserMessage)
		return ok && len(u.Content) == 1 && strings.Contains(fmt.Sprint(u.Content[0]), "SQLite")
	}) {
		t.Error("the tool result does not carry the answer")
	}
	err = h.call(events.OpAnswer, events.AnswerRequest{Caller: tn.Caller, SessionID: s.ID, RunID: r.RunID, ToolUseID: toolUse, Answers: answers}, &rep)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("a stale answer after the run ended = %v, want 409", err)
	}
	// The turn's last message is saved with the result's stop reason, as a
	// plain turn's is.
	h.waitRunState(tn, r.RunID, events.RunCompleted)
	var msgs []events.MessageRow
	h.must(events.OpMessagesList, events.MessageList{Caller: tn.Caller, SessionID: s.ID}, &msgs)
	last, err := events.DecodeOutput(msgs[len(msgs)-1].Message)
	if a, ok := last.(events.AssistantMessage); err != nil || !ok || a.StopReason != events.StopEndTurn {
		t.Errorf("the ask turn's last message was saved as %s, want an assistant message with stop reason end_turn", msgs[len(msgs)-1].Message)
	}
	h.checkTimings(tn, s.ID)
}

// TestTenantIsolation: every streammgr operation, called with another
// tenant's caller, answers not found and changes nothing.
func TestTenantIsolation(t *testing.T) {
	h := start(t, Config{})
	a, b := newTenant(), newTenant()
	s := h.session(a, "scripted/ask")
	feed := h.follow(a.TenantID, s.ID, 0)
	r := h.send(a, s.ID, "hello")
	feed.waitFor(t, 10*time.Second, runState(r.RunID, events.RunAwaitingInput))
	text := []events.Block{events.TextBlock{Text: "intrusion"}}
	title := "pwned"
	ops := map[string]any{
		events.OpSessionGet:    events.SessionRef{Caller: b.Caller, SessionID: s.ID},
		events.OpSessionUpdate: events.SessionUpdate{Caller: b.Caller, SessionID: s.ID, Title: &title},
		events.OpSessionDelete: events.SessionRef{Caller: b.Caller, SessionID: s.ID},
		events.OpSessionList:   events.SessionList{Caller: b.Caller, ProjectID: a.project},
		events.OpStart:         events.StartTurnRequest{Caller: b.Caller, SessionID: s.ID, Prompt: text},
		events.OpCancel:        events.RunControl{Caller: b.Caller, SessionID: s.ID, RunID: r.RunID},
		events.OpInterrupt:     events.RunControl{Caller: b.Caller, SessionID: s.ID},
		events.OpAnswer:        events.AnswerRequest{Caller: b.Caller, SessionID: s.ID, ToolUseID: "x", Answers: map[string]string{"q": "a"}},
		events.OpMessagesList:  events.MessageList{Caller: b.Caller, SessionID: s.ID},
		events.OpRunsList:      events.RunList{Caller: b.Caller, SessionID: s.ID},
		events.OpRunGet:        events.RunRef{Caller: b.Caller, RunID: r.RunID},
		events.OpRunEvents:     events.RunEvents{Caller: b.Caller, RunID: r.RunID},
		events.OpSnapshot:      events.SessionRef{Caller: b.Caller, SessionID: s.ID},
	}
	for op, req := range ops {
		var resp any
		err := h.call(op, req, &resp)
		if op == events.OpSessionList {
			if err != nil || resp == nil || len(resp.([]any)) != 0 {
				t.Errorf("%s as another tenant = %v, %v; want an empty list", op, resp, err)
			}
			continue
		}
		var apiErr *events.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
			t.Errorf("%s as another tenant = %v, want 404", op, err)
		}
	}
	var sess events.Session
	h.must(events.OpSessionGet, events.SessionRef{Caller: a.Caller, SessionID: s.ID}, &sess)
	if sess.Title == title || sess.ActiveRunID != r.RunID {
		t.Errorf("another tenant changed the session: %+v", sess)
	}
}
