package streammgr

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
)

// Chat events whose publication fails (here: CHAT does not exist yet, as
// during a leader election) are stored once it recovers, in the order they
// were queued, and nothing queued behind them overtakes them.
func TestChatPublisherKeepsSessionOrderAcrossFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, js := natstest.Connect(t, natstest.Start(t))
	c := newChatPublisher(js, logging.Discard())

	queue := func(session string, from, n int) []*chatPub {
		subject, _ := events.ChatSubject("t1", session)
		var msgs []*nats.Msg
		for i := from; i < from+n; i++ {
			m := nats.NewMsg(subject)
			m.Data = []byte(fmt.Sprint(i))
			m.Header.Set(events.HeaderMsgID, fmt.Sprintf("%s-%d", session, i))
			msgs = append(msgs, m)
		}
		return c.publish(ctx, session, msgs)
	}
	var pubs []*chatPub
	pubs = append(pubs, queue("s1", 0, 5)...)
	pubs = append(pubs, queue("s2", 0, 5)...)
	time.Sleep(300 * time.Millisecond) // the first attempts fail: no stream
	pubs = append(pubs, queue("s1", 5, 5)...)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamChat, Subjects: []string{"chat.>"}}); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	for i, p := range pubs {
		if p.wait(wctx) == 0 {
			t.Fatalf("chat event %d not stored", i)
		}
	}
	for _, s := range []struct {
		session string
		n       int
	}{{"s1", 10}, {"s2", 5}} {
		subject, _ := events.ChatSubject("t1", s.session)
		cons, err := js.OrderedConsumer(ctx, events.StreamChat, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cons.Fetch(s.n+1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for m := range batch.Messages() {
			got = append(got, string(m.Data()))
		}
		want := fmt.Sprint(seq(s.n))
		if fmt.Sprint(got) != want {
			t.Errorf("%s stored %v, want %s", s.session, got, want)
		}
	}
	// A sender leaves once its queue is empty (it may still be on its way out).
	deadline := time.Now().Add(2 * time.Second)
	for {
		c.mu.Lock()
		n := len(c.sessions)
		c.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d session senders still registered after their queues drained", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A publisher's senders are joined: once its ctx ends, wait returns
// although CHAT never came back, and every handle is closed, unstored.
func TestChatPublisherWaitJoinsItsSenders(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, js := natstest.Connect(t, natstest.Start(t))
	c := newChatPublisher(js, logging.Discard())
	var pubs []*chatPub
	for _, session := range []string{"s1", "s2"} {
		subject, _ := events.ChatSubject("t1", session)
		m := nats.NewMsg(subject)
		m.Header.Set(events.HeaderMsgID, session+"-0")
		pubs = append(pubs, c.publish(ctx, session, []*nats.Msg{m})...)
	}
	cancel() // no CHAT stream: the senders are retrying
	joined := make(chan struct{})
	go func() { c.wait(); close(joined) }()
	select {
	case <-joined:
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return after the publisher's ctx ended")
	}
	for i, p := range pubs {
		select {
		case <-p.done:
			if p.seq != 0 {
				t.Errorf("chat event %d stored at %d without a stream", i, p.seq)
			}
		default:
			t.Errorf("chat event %d still open after wait", i)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) != 0 {
		t.Errorf("%d senders still registered after wait", len(c.sessions))
	}
}

func seq(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}
