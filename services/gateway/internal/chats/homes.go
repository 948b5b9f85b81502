package chats

import "sync"

// maxHomes bounds the sessions a gateway remembers the project of.
const maxHomes = 100_000

// homes remembers which project each session lives in, per tenant. A
// session never moves to another project, so an entry stays true while the
// session exists. It saves the round trip to streammgr that a send, cancel,
// interrupt or answer would otherwise make only to learn the project; access
// to the project is still checked on every call, live. The entry of a
// session deleted through another gateway is harmless: streammgr, which
// scopes every query by tenant, answers that the session or run is not found.
type homes struct {
	mu sync.Mutex
	m  map[homeKey]string
}

type homeKey struct{ tenant, session string }

func (h *homes) get(tenant, session string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	project, ok := h.m[homeKey{tenant, session}]
	return project, ok
}

// put remembers a session's project; when full, it forgets some other
// session first (any one: a miss costs one lookup).
func (h *homes) put(tenant, session, project string) {
	if project == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[homeKey]string{}
	}
	if len(h.m) >= maxHomes {
		for k := range h.m {
			delete(h.m, k)
			break
		}
	}
	h.m[homeKey{tenant, session}] = project
}

func (h *homes) forget(tenant, session string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, homeKey{tenant, session})
}
