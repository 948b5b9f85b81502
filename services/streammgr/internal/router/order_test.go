package router

import (
	"testing"
	"time"

	"clopen.dev/pkg/events"
)

func held(epoch, seq uint64) Held {
	return Held{Env: events.Envelope{Epoch: epoch, Seq: seq}}
}

func seqs(hs []Held) []uint64 {
	var out []uint64
	for _, h := range hs {
		out = append(out, h.Env.Seq)
	}
	return out
}

func TestOrdererReleasesInSeqOrder(t *testing.T) {
	var o Orderer
	now := time.Now()
	if got := seqs(o.Offer(held(1, 3), 1, 1, now)); len(got) != 0 {
		t.Fatalf("3 after 1 released %v, want it held for 2", got)
	}
	if !o.Pending() {
		t.Fatal("nothing pending while 3 waits")
	}
	got := seqs(o.Offer(held(1, 2), 1, 1, now))
	if len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("released %v, want [2 3]", got)
	}
	if got := seqs(o.Offer(held(1, 2), 1, 3, now)); len(got) != 1 {
		t.Errorf("an already routed seq is passed through for the router to skip, got %v", got)
	}
}

func TestOrdererPutsStreammgrEventsAfterHeldOnes(t *testing.T) {
	var o Orderer
	now := time.Now()
	o.Offer(held(1, 5), 1, 3, now) // 4 missing
	if got := o.Offer(held(0, 0), 1, 3, now); len(got) != 0 {
		t.Fatalf("streammgr's event jumped the queue: %v", seqs(got))
	}
	got := o.Offer(held(1, 4), 1, 3, now)
	if s := seqs(got); len(s) != 3 || s[0] != 4 || s[1] != 5 || s[2] != 0 {
		t.Fatalf("released %v, want [4 5 0]", s)
	}
}

func TestOrdererGivesUpOnAGapAfterTheTimeout(t *testing.T) {
	var o Orderer
	now := time.Now()
	o.Offer(held(1, 7), 1, 1, now)
	if got := o.Expire(now.Add(GapTimeout / 2)); len(got) != 0 {
		t.Fatal("released before the gap timeout")
	}
	if got := seqs(o.Expire(now.Add(GapTimeout + time.Second))); len(got) != 1 || got[0] != 7 {
		t.Fatalf("after the timeout released %v, want [7]", got)
	}
}

func TestOrdererNewEpochStartsAtOne(t *testing.T) {
	var o Orderer
	now := time.Now()
	if got := seqs(o.Offer(held(2, 1), 1, 40, now)); len(got) != 1 || got[0] != 1 {
		t.Fatalf("first event of a new owner released %v, want [1]", got)
	}
}
