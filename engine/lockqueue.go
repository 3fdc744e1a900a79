package engine

import "sync"

// opLock is the engine's lock, to which a Watch or cancel, which must
// not wait, hands its operation (op) instead of waiting: the operation
// runs at once if the lock is free, else whoever holds it runs it before
// letting go. So a call never waits for a response to be applied, and
// takes effect between two parts of one at worst.
//
// Who runs queued operations: whoever takes the lock runs those queued
// before (Lock), and, letting go, those queued while it held it (Unlock),
// whatever it took the lock for: a stream's call to the engine (host.go),
// a timer, Dump or ResourceStatus, the metrics' gauges, the store's
// writer. An operation runs with the lock held, never on the serializer:
// what it tells watchers, it schedules.
type opLock struct {
	// run applies one queued operation, with the lock held
	// (Engine.applyOpLocked).
	run func(op)

	mu sync.Mutex
	// queueMu guards queue alone, and is never held while mu is wanted.
	queueMu sync.Mutex
	queue   []op
	// spare is the array of the operations last run, for the next ones: a
	// burst of calls appends to it rather than to a new one.
	spare []op
}

// Do runs o, at once if the lock is free, else by its holder before it
// lets go. Do never waits for the lock.
func (m *opLock) Do(o op) {
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
func (m *opLock) Lock() {
	m.mu.Lock()
	m.runQueued()
}

// Unlock unlocks m, then runs the operations queued while it was held,
// unless someone else holds it by then and will.
func (m *opLock) Unlock() {
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

func (m *opLock) runQueued() {
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
			m.run(o)
		}
		clear(ops)
		if cap(ops) <= maxSpareOps {
			m.spare = ops[:0]
		}
	}
}

// maxSpareOps bounds the array kept for the next operations: a burst of
// 10,000 watches is not to keep 10,000 operations' worth of memory for
// as long as the engine lives.
const maxSpareOps = 256
