package snapshot

import "sync"

// Memo keeps the manifests a worker loaded or captured last, so that a
// turn on the worker that already holds its session's snapshot does not
// fetch and decode it again (about 1 MB for a 20,000-file workspace).
// Manifests are immutable and named by their content, so a hit is what the
// store holds; the manifests it returns are shared and must not be
// changed. It holds at most its budget of entries (files, dirs and links
// over every manifest), dropping the oldest first. Safe for concurrent use.
type Memo struct {
	budget int

	mu      sync.Mutex
	entries int
	order   []memoKey // oldest first
	held    map[memoKey]*Manifest
}

type memoKey struct{ tenant, id string }

// NewMemo returns a memo of at most budget entries; about 200 bytes each.
func NewMemo(budget int) *Memo {
	return &Memo{budget: budget, held: map[memoKey]*Manifest{}}
}

// get returns the tenant's manifest id, nil when not held.
func (m *Memo) get(tenant, id string) *Manifest {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[memoKey{tenant, id}]
}

// put remembers the tenant's manifest man (its ID set).
func (m *Memo) put(tenant string, man *Manifest) {
	if m == nil || man == nil || man.ID == "" {
		return
	}
	n := man.size()
	if n > m.budget {
		return
	}
	k := memoKey{tenant, man.ID}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.held[k]; ok {
		return
	}
	for m.entries+n > m.budget && len(m.order) > 0 {
		old := m.order[0]
		m.order = m.order[1:]
		m.entries -= m.held[old].size()
		delete(m.held, old)
	}
	m.held[k] = man
	m.order = append(m.order, k)
	m.entries += n
}

// size is how many entries m holds over all its trees.
func (man *Manifest) size() int {
	n := 1
	for _, entries := range man.Trees {
		n += len(entries)
	}
	return n
}
