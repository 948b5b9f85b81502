package chats

import (
	"strconv"
	"testing"
)

func TestHomesAreScopedAndBounded(t *testing.T) {
	var h homes
	h.put("acme", "s1", "p1")
	if p, ok := h.get("acme", "s1"); !ok || p != "p1" {
		t.Errorf("get(acme, s1) = %q, %v; want p1", p, ok)
	}
	if p, ok := h.get("bolt", "s1"); ok {
		t.Errorf("another tenant sees acme's session in %q", p)
	}
	h.put("acme", "s2", "") // an unknown project is not remembered
	if _, ok := h.get("acme", "s2"); ok {
		t.Error("a session without a project was remembered")
	}
	h.forget("acme", "s1")
	if _, ok := h.get("acme", "s1"); ok {
		t.Error("a forgotten session is still known")
	}
	for i := range maxHomes + 100 {
		h.put("acme", "s"+strconv.Itoa(i), "p")
	}
	if n := len(h.m); n != maxHomes {
		t.Errorf("%d sessions remembered, want the bound %d", n, maxHomes)
	}
	if p, ok := h.get("acme", "s"+strconv.Itoa(maxHomes+99)); !ok || p != "p" {
		t.Error("the latest session was not remembered")
	}
}
