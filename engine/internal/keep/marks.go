package keep

import (
	"sync"
	"time"
)

// Marks are the changes a Writer gathers, by reference: the response path
// marks a resource R to keep, or to forget, and the Writer's gather
// reads each one marked to keep as it is then, once however many
// responses changed it meanwhile. The caller guards Marks with a lock,
// which Gather takes for a turn of at most gatherTurn marks at a time:
// a push of 100,000 resources does not hold it for all of them.
type Marks[R comparable] struct {
	// Wake is called at the first mark after a Gather: Writer.Wake.
	Wake func()

	order []mark[R]
	next  int    // the first of order not yet gathered
	seq   uint64 // the number of the next mark
	// kept are the resources marked to keep: the number of their mark,
	// and when their ttl runs out (zero: none). A Forget takes one out.
	kept map[R]keptMark
}

type mark[R comparable] struct {
	r      R
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
func (m *Marks[R]) Keep(r R, expires time.Time) {
	if m.kept == nil {
		m.kept = make(map[R]keptMark)
	}
	k, marked := m.kept[r]
	if !marked {
		k.seq = m.add(r, false)
	}
	k.expires = expires
	m.kept[r] = k
}

// Forget marks r's removal.
func (m *Marks[R]) Forget(r R) {
	delete(m.kept, r)
	m.add(r, true)
}

func (m *Marks[R]) add(r R, forget bool) uint64 {
	m.order = append(m.order, mark[R]{r, forget, m.seq})
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
func (m *Marks[R]) Gather(mu sync.Locker, change func(r R, forget bool) (Change, bool)) []Change {
	var out []Change
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
			kept, ok := m.kept[k.r]
			if !ok || kept.seq != k.seq {
				continue // forgotten since: a forget follows, and any later keep
			}
			delete(m.kept, k.r)
			expires = kept.expires
		}
		if c, ok := change(k.r, k.forget); ok {
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

// Expiry is when a ttl received at received runs out: zero for none.
func Expiry(received time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return received.Add(ttl)
}
