// Package oplock is a mutex to which a caller that must not wait hands
// an operation instead: the operation runs at once if the mutex is free,
// else whoever holds it runs it before letting go. The engine applies
// Watch and cancel calls this way, so that a call never waits for a
// response to be applied and takes effect between its parts.
package oplock

import "sync"

// Mutex is a mutual exclusion lock that runs queued operations while it
// is held. Run must be set before first use; the zero value is otherwise
// an unlocked mutex with nothing queued.
type Mutex[Op any] struct {
	// Run applies one queued operation, with the mutex held.
	Run func(Op)

	mu sync.Mutex
	// queueMu guards queue alone, and is never held while mu is wanted.
	queueMu sync.Mutex
	queue   []Op
	// spare is the array of the operations last run, for the next ones: a
	// burst of calls appends to it rather than to a new one.
	spare []Op
}

// Do runs o, at once if the mutex is free, else by its holder before it
// lets go. Do never waits for the mutex.
func (m *Mutex[Op]) Do(o Op) {
	m.queueMu.Lock()
	m.queue = append(m.queue, o)
	m.queueMu.Unlock()
	if m.mu.TryLock() {
		m.runQueued()
		m.Unlock()
	}
}

// Lock locks m, then runs the operations queued meanwhile, so that what
// the holder does next sees them.
func (m *Mutex[Op]) Lock() {
	m.mu.Lock()
	m.runQueued()
}

// Unlock unlocks m, then runs the operations queued while it was held,
// unless someone else holds it by then and will.
func (m *Mutex[Op]) Unlock() {
	for {
		m.mu.Unlock()
		m.queueMu.Lock()
		queued := len(m.queue) > 0
		m.queueMu.Unlock()
		if !queued || !m.mu.TryLock() {
			return
		}
		m.runQueued()
	}
}

func (m *Mutex[Op]) runQueued() {
	for {
		m.queueMu.Lock()
		ops := m.queue
		m.queue, m.spare = m.spare[:0], nil
		m.queueMu.Unlock()
		if len(ops) == 0 {
			m.spare = ops
			return
		}
		for _, o := range ops {
			m.Run(o)
		}
		clear(ops)
		m.spare = ops[:0]
	}
}
