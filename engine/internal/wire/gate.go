package wire

import (
	"sync"
	"sync/atomic"
	"time"
)

// Gate holds back the next read from a stream until every watcher
// notified of the previous response has called done (gRFC A88's flow
// control; grpc-go's ADS flow control works the same way). It remembers
// what each notification was about, so that a watcher that forgets done
// can be named.
type Gate struct {
	pending atomic.Int64
	open    chan struct{}
	once    sync.Once
	clock   Clock
	// opened is when the gate opened: written before open is closed,
	// read only after.
	opened time.Time
	// notes are added under the engine's lock before arm, and only read
	// after it.
	notes []*Hold
}

// Hold is one notification's hold on a gate: [Gate.Hold] registers it and
// Release, the notification's done, lets go. The engine embeds it in the
// notification, so that holding costs no allocation of its own.
type Hold struct {
	gate   *Gate
	about  Abouter
	called atomic.Bool
}

// Abouter says what a notification is about. It is asked only when
// notifications hold reads too long, so the notification itself can
// answer, rather than carry the names.
type Abouter interface{ About() Pending }

// About makes a Pending its own Abouter.
func (p Pending) About() Pending { return p }

// Release is the done callback: safe to call more than once, it counts
// only the first call.
func (h *Hold) Release() {
	if h.called.CompareAndSwap(false, true) {
		h.gate.release()
	}
}

// NewGate returns a gate holding one token of its own, released by arm
// once every notification of the response has been scheduled, so that
// early done calls cannot open the gate while more are being added.
func NewGate(clock Clock) *Gate {
	g := &Gate{open: make(chan struct{}), clock: clock}
	g.pending.Store(1)
	return g
}

// Hold registers h, a notification about a resource; h.Release is its
// done. Call it with the engine's lock held, before the gate is armed.
func (g *Gate) Hold(h *Hold, about Abouter) {
	g.pending.Add(1)
	h.gate, h.about = g, about
	g.notes = append(g.notes, h)
}

func (g *Gate) release() {
	if g.pending.Add(-1) == 0 {
		g.once.Do(func() {
			g.opened = g.clock.Now()
			close(g.open)
		})
	}
}

func (g *Gate) isOpen() bool {
	select {
	case <-g.open:
		return true
	default:
		return false
	}
}

// openedAt returns when the gate opened, if it has.
func (g *Gate) openedAt() (time.Time, bool) {
	if !g.isOpen() {
		return time.Time{}, false
	}
	return g.opened, true
}

// arm releases the gate's own token.
func (g *Gate) arm() { g.release() }

// outstanding returns the resources whose notifications still wait for
// done, each once, in notification order, and the number of those
// notifications. Only after arm.
func (g *Gate) outstanding() ([]Pending, int) {
	var out []Pending
	n := 0
	seen := map[Pending]bool{}
	for _, p := range g.notes {
		if p.called.Load() {
			continue
		}
		n++
		if about := p.about.About(); !seen[about] {
			seen[about] = true
			out = append(out, about)
		}
	}
	return out, n
}
