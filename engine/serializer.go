package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// readGate holds back the next read from an ADS stream until every watcher
// notified of the previous response has called done (gRFC A88's flow
// control; grpc-go's ADS flow control works the same way). It remembers
// which resource each notification was about, so that a watcher that
// forgets done can be named.
type readGate struct {
	pending atomic.Int64
	open    chan struct{}
	once    sync.Once
	clock   Clock
	// opened is when the gate opened: written before open is closed,
	// read only after.
	opened time.Time
	// notes are added under the engine's lock before arm, and only read
	// after it.
	notes []*pendingDone
}

// pendingDone is one notification's done.
type pendingDone struct {
	gate   *readGate
	entry  *entry
	called atomic.Bool
}

// release is the done callback: safe to call more than once, it counts
// only the first call.
func (p *pendingDone) release() {
	if p.called.CompareAndSwap(false, true) {
		p.gate.release()
	}
}

// newReadGate returns a gate holding one token of its own, released by
// arm once every notification of the response has been scheduled, so that
// early done calls cannot open the gate while more are being added.
func newReadGate(clock Clock) *readGate {
	g := &readGate{open: make(chan struct{}), clock: clock}
	g.pending.Store(1)
	return g
}

// add registers a notification about en and returns its done.
func (g *readGate) add(en *entry) func() {
	g.pending.Add(1)
	p := &pendingDone{gate: g, entry: en}
	g.notes = append(g.notes, p)
	return p.release
}

func (g *readGate) release() {
	if g.pending.Add(-1) == 0 {
		g.once.Do(func() {
			g.opened = g.clock.Now()
			close(g.open)
		})
	}
}

func (g *readGate) isOpen() bool {
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

// openedAt returns when the gate opened, if it has.
func (g *readGate) openedAt() (time.Time, bool) {
	if !g.isOpen() {
		return time.Time{}, false
	}
	return g.opened, true
}

// arm releases the gate's own token.
func (g *readGate) arm() { g.release() }

// outstanding returns the entries whose notifications still wait for
// done, each once, in notification order. Only after arm.
func (g *readGate) outstanding() []*entry {
	var out []*entry
	seen := map[*entry]bool{}
	for _, p := range g.notes {
		if !p.called.Load() && !seen[p.entry] {
			seen[p.entry] = true
			out = append(out, p.entry)
		}
	}
	return out
}

// outstandingCount is the number of notifications still waiting for done.
func (g *readGate) outstandingCount() int {
	n := 0
	for _, p := range g.notes {
		if !p.called.Load() {
			n++
		}
	}
	return n
}
