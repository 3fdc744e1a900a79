package engine

import (
	"sync"
	"time"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// Writing the last-known-good store: the response path marks each
// resource it accepted (keepLocked) or that is gone (forgetLocked); the
// writer's goroutine (package storewriter) gathers the marks when it
// writes, and reads each resource as it is then.

// keepLocked has the store keep en's resource, just accepted from a
// server with ttl (0: none): the writer reads en when it writes.
func (e *Engine) keepLocked(en *entry, ttl time.Duration) {
	if lg := e.storeSide; lg != nil && !en.typ.NotStored {
		lg.marks.keep(en, expiry(en.updated(), ttl))
	}
}

// forgetLocked has the store forget en's resource: deleted by its
// server, dropped, or no longer watched.
func (e *Engine) forgetLocked(en *entry) {
	if lg := e.storeSide; lg != nil && !en.typ.NotStored {
		lg.marks.forget(en)
	}
}

// gatherStore is the writer's gather: what was marked since its last
// call, each resource to keep as it is now.
func (e *Engine) gatherStore(lg *storeSide) []storage.Change {
	return lg.marks.gather(&e.mu, func(en *entry, forget bool) (storage.Change, bool) {
		c := storage.Change{Resource: storage.Resource{Authority: en.auth.name, TypeURL: en.typ.TypeURL, Name: en.name}, Delete: forget}
		if !forget && en.source != nil {
			c.Server, c.Version, c.Raw, c.Received = en.source.server.URI, en.version, en.raw, en.updated()
		}
		return c, forget || en.source != nil
	})
}

// Marks are the changes a Writer gathers, by reference: the response path
// marks a resource R to keep, or to forget, and the Writer's gather
// reads each one marked to keep as it is then, once however many
// responses changed it meanwhile. The caller guards Marks with a lock,
// which Gather takes for a turn of at most gatherTurn marks at a time:
// a push of 100,000 resources does not hold it for all of them.
type storeMarks struct {
	// Wake is called at the first mark after a Gather: Writer.Wake.
	Wake func()

	order []storeMark
	next  int    // the first of order not yet gathered
	seq   uint64 // the number of the next mark
	// kept are the resources marked to keep: the number of their mark,
	// and when their ttl runs out (zero: none). A Forget takes one out.
	kept map[*entry]keptMark
}

type storeMark struct {
	en     *entry
	forget bool
	seq    uint64
}

type keptMark struct {
	seq     uint64
	expires time.Time
}

// gatherTurn is how many marks Gather reads under one hold of the lock.
const gatherTurn = 512

// Keep marks r to be written as it is when gathered, expiring at expires
// (zero: never).
func (m *storeMarks) keep(en *entry, expires time.Time) {
	if m.kept == nil {
		m.kept = make(map[*entry]keptMark)
	}
	k, marked := m.kept[en]
	if !marked {
		k.seq = m.add(en, false)
	}
	k.expires = expires
	m.kept[en] = k
}

// Forget marks r's removal.
func (m *storeMarks) forget(en *entry) {
	delete(m.kept, en)
	m.add(en, true)
}

func (m *storeMarks) add(en *entry, forget bool) uint64 {
	m.order = append(m.order, storeMark{en, forget, m.seq})
	m.seq++
	if len(m.order)-m.next == 1 && m.Wake != nil {
		m.Wake()
	}
	return m.seq - 1
}

// Gather returns the changes of the marks made before it, in order,
// taking mu for each turn: change gives r's (its key alone when forget),
// or false to leave it out. A resource's state is read at its last keep
// mark, so a resource forgotten after it was kept is left out there, and
// one kept again is written after its forget. Marks made meanwhile are
// left for the next Gather, and Wake is called for them.
func (m *storeMarks) gather(mu sync.Locker, change func(en *entry, forget bool) (storage.Change, bool)) []storage.Change {
	var out []storage.Change
	mu.Lock()
	defer mu.Unlock()
	until := m.seq
	for read := 1; m.next < len(m.order) && m.order[m.next].seq < until; read++ {
		if read%gatherTurn == 0 {
			mu.Unlock() // a turn: what waits for the lock goes first
			mu.Lock()
		}
		k := m.order[m.next]
		m.next++
		var expires time.Time
		if !k.forget {
			kept, ok := m.kept[k.en]
			if !ok || kept.seq != k.seq {
				continue // forgotten since: a forget follows, and any later keep
			}
			delete(m.kept, k.en)
			expires = kept.expires
		}
		if c, ok := change(k.en, k.forget); ok {
			c.Expires = expires
			out = append(out, c)
		}
	}
	n := copy(m.order, m.order[m.next:])
	clear(m.order[n:]) // the resources are not held until overwritten
	m.order, m.next = m.order[:n], 0
	if n > 0 && m.Wake != nil {
		m.Wake()
	}
	return out
}

// expiry is when a ttl received at received runs out: zero for none.
func expiry(received time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return received.Add(ttl)
}
