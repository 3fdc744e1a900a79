// Package refcount shares one value per key among its users: built on
// first use, closed with its last user, or with the map. engine.Pool
// keeps its engines, one per data plane target, in one; this package
// holds the counting, so that the Pool is only what it shares.
package refcount

import (
	"cmp"
	"errors"
	"io"
	"maps"
	"slices"
	"sync"
)

// Map holds the shared values by key. It is safe for concurrent use.
type Map[K cmp.Ordered, V io.Closer] struct {
	closedErr error

	mu     sync.Mutex
	closed bool
	values map[K]*counted[V]
}

type counted[V any] struct {
	v    V
	refs int
}

// New returns an empty map whose Get fails with closedErr once it is
// closed.
func New[K cmp.Ordered, V io.Closer](closedErr error) *Map[K, V] {
	return &Map[K, V]{closedErr: closedErr, values: make(map[K]*counted[V])}
}

// Get returns key's value, built (with the map's lock held) on first use,
// and the function that releases this reference; release is idempotent.
// A value build fails to make is not kept.
func (m *Map[K, V]) Get(key K, build func() (V, error)) (v V, release func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return v, nil, m.closedErr
	}
	c := m.values[key]
	if c == nil {
		if v, err = build(); err != nil {
			return v, nil, err
		}
		c = &counted[V]{v: v}
		m.values[key] = c
	}
	c.refs++
	return c.v, sync.OnceFunc(func() { m.release(key, c) }), nil
}

// release drops a reference; the last closes the value, without the lock.
func (m *Map[K, V]) release(key K, c *counted[V]) {
	m.mu.Lock()
	c.refs--
	last := c.refs == 0 && m.values[key] == c
	if last {
		delete(m.values, key)
	}
	m.mu.Unlock()
	if last {
		c.v.Close()
	}
}

// Keys returns the keys that have a value, sorted.
func (m *Map[K, V]) Keys() []K {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := slices.AppendSeq(make([]K, 0, len(m.values)), maps.Keys(m.values)) // never nil
	slices.Sort(keys)
	return keys
}

// Values returns the values, in their keys' order.
func (m *Map[K, V]) Values() []V {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]V, 0, len(m.values))
	for _, k := range slices.Sorted(maps.Keys(m.values)) {
		out = append(out, m.values[k].v)
	}
	return out
}

// Close closes every value, whoever still uses it, and returns their
// errors joined; later Gets fail and releases do nothing.
func (m *Map[K, V]) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	values := m.values
	m.values = nil
	m.mu.Unlock()
	var errs []error
	for _, c := range values {
		errs = append(errs, c.v.Close())
	}
	return errors.Join(errs...)
}
