package engine

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// serializer runs callbacks one at a time, in the order they were
// scheduled, on a goroutine of its own. Scheduling never blocks: the queue
// is unbounded, so the engine can schedule while holding its lock and the
// order watchers see is the order the engine decided in.
type serializer struct {
	mu      sync.Mutex
	queue   []func()
	wake    chan struct{}
	closed  bool
	stopped chan struct{}
	// goid is the serializer goroutine's ID, so that Close can tell it is
	// being called from a callback, which it must not wait for.
	goid atomic.Uint64
}

func newSerializer() *serializer {
	s := &serializer{wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	started := make(chan struct{})
	go func() {
		s.goid.Store(goroutineID())
		close(started)
		s.run()
	}()
	<-started
	return s
}

// inCallback reports whether the calling goroutine is the serializer's,
// that is whether the caller is a callback.
func (s *serializer) inCallback() bool { return goroutineID() == s.goid.Load() }

// goroutineID returns the calling goroutine's ID, read from the header of
// its stack trace ("goroutine 42 [running]:"). Go offers no other way; it
// is used only on rare paths (Close).
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// schedule queues f; it reports false, without queueing, after close.
func (s *serializer) schedule(f func()) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, f)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

func (s *serializer) run() {
	defer close(s.stopped)
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			if s.closed {
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			<-s.wake
			continue
		}
		f := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		s.mu.Unlock()
		f()
	}
}

// close stops accepting callbacks, drops the queued ones and waits for the
// running one to return, unless it is the caller: called from a callback,
// it returns at once, and the goroutine ends when the callback returns.
func (s *serializer) close() {
	s.mu.Lock()
	s.closed = true
	s.queue = nil
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if !s.inCallback() {
		<-s.stopped
	}
}

// closeAsync stops accepting callbacks; the queued ones still run and the
// goroutine ends after them. It does not wait, so a callback may call it.
func (s *serializer) closeAsync() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

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
