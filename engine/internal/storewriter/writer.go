// Package storewriter writes an engine's last-known-good store from a
// goroutine of its own: it gathers what the engine accepted, keeps only
// the latest change per resource, and writes one change set per interval
// at most, so that a push of 1,000 changed resources costs the store one
// transaction, however many pushes come meanwhile. It knows nothing of
// the engine: the engine hands it a function that gathers the changes
// made since the last call, and one that applies a change set.
package storewriter

import (
	"bytes"
	"sync"
	"time"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// key names a resource in the store.
type key struct{ authority, typeURL, name string }

func keyOf(c storage.Change) key { return key{c.Authority, c.TypeURL, c.Name} }

// Writer gathers changes and writes them in batches.
type Writer struct {
	gather   func() []storage.Change
	apply    func([]storage.Change) error
	failed   func(error)
	interval time.Duration
	refresh  time.Duration

	mu      sync.Mutex
	pending map[key]storage.Change
	// kept is what the store holds, as far as this writer wrote it: bytes
	// it holds already are written again only to refresh their time.
	kept   map[key]kept
	closed bool
	wake   chan struct{}
	now    chan struct{} // a Flush waits
	stop   chan struct{} // closed by Close
	done   chan struct{} // closed when the writer has stopped
	// Flush's bookkeeping: a flush wants the changes put before it
	// written; written says how far the writer got, and err how the last
	// change set went.
	wanted, written uint64
	err             error
	flushed         *sync.Cond
}

type kept struct {
	raw               []byte
	received, expires time.Time
}

// NewWriter starts a writer: gather returns the changes made since its
// last call, in the order they were made; apply writes a change set,
// failed hears of a failed one (whose changes are kept for the next),
// and interval is how long changes gather, from a Wake, before they are
// written: one change set per interval at most, and the changes of one
// response in one. A resource changed back to the bytes the store holds
// is written only once refresh has passed since they were received, to
// keep their time recent.
//
// The writer calls gather from its own goroutine, with none of its locks
// held, so gather may take the engine's: the changes are read when they
// are written, not copied when they are made.
func NewWriter(gather func() []storage.Change, apply func([]storage.Change) error, failed func(error), interval, refresh time.Duration) *Writer {
	w := &Writer{gather: gather, apply: apply, failed: failed, interval: interval, refresh: refresh,
		pending: make(map[key]storage.Change), kept: make(map[key]kept),
		wake: make(chan struct{}, 1), now: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	w.flushed = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// Wake tells the writer that there are changes to gather: it gathers
// and writes them within an interval.
func (w *Writer) Wake() { w.signal() }

// Forget has the store forget resources, named by their key, that no
// entry of the engine holds (those a load found past serving), with the
// next change set.
func (w *Writer) Forget(resources []storage.Resource) {
	if len(resources) == 0 {
		return
	}
	w.mu.Lock()
	for _, r := range resources {
		w.putLocked(storage.Change{Resource: r, Delete: true})
	}
	w.mu.Unlock()
	w.signal()
}

// putLocked records a gathered change; the latest change of a resource
// wins.
func (w *Writer) putLocked(c storage.Change) {
	if k, ok := w.kept[keyOf(c)]; ok && !c.Delete && c.Received.Sub(k.received) < w.refresh && c.Expires.Equal(k.expires) && sameBytes(k.raw, c.Raw) {
		delete(w.pending, keyOf(c)) // a change back to what is kept
		return
	}
	w.pending[keyOf(c)] = c
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Writer) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
		case <-w.stop:
		}
		// A response's changes are put one after another: what comes
		// within an interval of the first is one change set, of the
		// latest state of each resource, unless a Flush wants it now.
		select {
		case <-time.After(w.interval):
		case <-w.now:
		case <-w.stop:
		}
		if !w.writeOnce() {
			return
		}
	}
}

// writeOnce writes what is pending, and reports whether to go on.
func (w *Writer) writeOnce() bool {
	// What a Flush or Close wants is read before gathering: the changes
	// made before it are in this set.
	w.mu.Lock()
	wanted, closed := w.wanted, w.closed
	w.mu.Unlock()
	gathered := w.gather()
	w.mu.Lock()
	for _, c := range gathered {
		w.putLocked(c)
	}
	batch := make([]storage.Change, 0, len(w.pending))
	for _, c := range w.pending {
		batch = append(batch, c)
	}
	clear(w.pending)
	w.mu.Unlock()
	var err error
	if len(batch) > 0 {
		err = w.apply(batch)
	}
	w.mu.Lock()
	if err == nil {
		for _, c := range batch {
			if c.Delete {
				delete(w.kept, keyOf(c))
			} else {
				w.kept[keyOf(c)] = kept{c.Raw, c.Received, c.Expires}
			}
		}
	}
	if err != nil && !closed {
		// Kept for the next set, unless a later change replaced it.
		for _, c := range batch {
			if _, newer := w.pending[keyOf(c)]; !newer {
				w.pending[keyOf(c)] = c
			}
		}
	}
	w.written, w.err = wanted, err
	w.flushed.Broadcast()
	w.mu.Unlock()
	if err != nil && w.failed != nil {
		w.failed(err)
	}
	return !closed
}

// Flush writes every change made before it, at once, and returns how the
// change set went.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.wanted++
	want := w.wanted
	w.signal()
	select {
	case w.now <- struct{}{}:
	default:
	}
	for w.written < want && !w.closed {
		w.flushed.Wait()
	}
	return w.err
}

// Close writes what is pending and what is left to gather, once, and
// stops the writer: gather is not called after Close returns.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
		w.flushed.Broadcast()
	}
	w.mu.Unlock()
	<-w.done
}

// sameBytes compares the bytes, at once when they are one array: the
// engine's decode memo hands equal bytes from a server as the same array.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b)
}
