// Package alloc saves the engine allocations on the response path, where
// a response of 10,000 resources makes a notification for each: their
// notices come from a few chunks, and their origins (version, server,
// time), equal within a response, are shared.
package alloc

// maxChunk is the most values one chunk holds.
const maxChunk = 64

// Chunks hands out zero values of T for runs, each named by a key K (a
// response). The zero value is ready to use.
type Chunks[K comparable, T any] struct {
	key  K
	free []T // the rest of the current chunk
	size int
}

// New returns a zero T. The values of one run come from chunks doubling
// from 1 to 64 values: one allocation per chunk, one for a one-value
// run. A chunk lives until none of its values is reachable.
func (c *Chunks[K, T]) New(key K) *T {
	if c.key != key {
		c.key, c.free, c.size = key, nil, 0
	}
	if len(c.free) == 0 {
		c.size = min(max(2*c.size, 1), maxChunk)
		c.free = make([]T, c.size)
	}
	v := &c.free[0]
	c.free = c.free[1:]
	return v
}

// End ends the run: c lets go of its key and of the rest of its chunk.
func (c *Chunks[K, T]) End() {
	var none K
	c.key, c.free = none, nil
}

// Shared hands out one pointer for equal values made in a row. The zero
// value is ready to use.
type Shared[T comparable] struct{ last *T }

// Of returns the last pointer if it points to a value equal to v, else a
// new one, which becomes the last.
func (s *Shared[T]) Of(v T) *T {
	if s.last != nil && *s.last == v {
		return s.last
	}
	made := v // allocated here only: v itself does not escape
	s.last = &made
	return &made
}
