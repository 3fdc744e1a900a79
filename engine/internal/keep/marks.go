package keep

import "time"

// Marks are the changes a Writer gathers, by reference: the response path
// marks a resource R to keep, or to forget, and the Writer's gather
// reads each one marked to keep as it is then, once however many
// responses changed it meanwhile. The caller guards Marks with the lock
// its gather takes, so that a mark and the state it refers to agree.
type Marks[R comparable] struct {
	// Wake is called at the first mark after a Gather: Writer.Wake.
	Wake func()

	order []mark[R]
	// kept are the resources marked to keep, with when their ttl runs out
	// (zero: none); a Forget takes a resource out.
	kept map[R]time.Time
}

type mark[R comparable] struct {
	r      R
	forget bool
}

// Keep marks r to be written as it is when gathered, expiring at expires
// (zero: never).
func (m *Marks[R]) Keep(r R, expires time.Time) {
	if m.kept == nil {
		m.kept = make(map[R]time.Time)
	}
	if _, marked := m.kept[r]; !marked {
		m.add(mark[R]{r, false})
	}
	m.kept[r] = expires
}

// Forget marks r's removal.
func (m *Marks[R]) Forget(r R) {
	delete(m.kept, r)
	m.add(mark[R]{r, true})
}

func (m *Marks[R]) add(k mark[R]) {
	if m.order = append(m.order, k); len(m.order) == 1 && m.Wake != nil {
		m.Wake()
	}
}

// Gather returns the changes marked since the last Gather, in order:
// change gives r's (its key alone when forget), or false to leave it
// out. A resource marked to keep and then forgotten is left out where
// it was kept; one kept again after is written, there and at its last
// mark, as it is now.
func (m *Marks[R]) Gather(change func(r R, forget bool) (Change, bool)) []Change {
	out := make([]Change, 0, len(m.order))
	for _, k := range m.order {
		expires, kept := m.kept[k.r]
		if !k.forget && !kept {
			continue
		}
		if c, ok := change(k.r, k.forget); ok {
			if !k.forget {
				c.Expires = expires
			}
			out = append(out, c)
		}
	}
	clear(m.kept)
	clear(m.order) // the resources are not held until marks overwrite them
	m.order = m.order[:0]
	return out
}

// Expiry is when a ttl received at received runs out: zero for none.
func Expiry(received time.Time, ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return received.Add(ttl)
}
