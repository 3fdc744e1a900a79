package watchrec

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/registry"
)

// Event is one callback.
type Event struct {
	Ambient  bool              // OnAmbientError, else OnResourceChanged
	Resource registry.Resource // OnResourceChanged with a resource
	Err      error             // the error, nil for a resource or a cleared ambient error
	Done     func()            // the callback's done; already called unless the recorder holds dones
}

func (e Event) String() string {
	switch {
	case e.Ambient:
		return fmt.Sprintf("ambient(%v)", e.Err)
	case e.Err != nil:
		return fmt.Sprintf("changed(error %s: %v)", status.Code(e.Err), e.Err)
	}
	return fmt.Sprintf("changed(%v)", e.Resource)
}

// Recorder records callbacks. Its zero value is not usable; call New.
type Recorder struct {
	events   chan Event
	holdDone bool
	mu       sync.Mutex
	count    int
}

// New returns a recorder that calls done at once.
func New() *Recorder { return &Recorder{events: make(chan Event, 10000)} }

// NewHolding returns a recorder that leaves done to the test (Event.Done),
// for flow-control tests.
func NewHolding() *Recorder { return &Recorder{events: make(chan Event, 10000), holdDone: true} }

// OnResourceChanged records a changed event.
func (r *Recorder) OnResourceChanged(res registry.Resource, err error, done func()) {
	r.record(Event{Resource: res, Err: err, Done: done})
}

// OnAmbientError records an ambient event.
func (r *Recorder) OnAmbientError(err error, done func()) {
	r.record(Event{Ambient: true, Err: err, Done: done})
}

func (r *Recorder) record(ev Event) {
	r.mu.Lock()
	r.count++
	r.mu.Unlock()
	if !r.holdDone {
		ev.Done()
	}
	r.events <- ev
}

// Events returns the channel events arrive on, for tests that wait on
// several things at once.
func (r *Recorder) Events() <-chan Event { return r.events }

// Count returns how many callbacks were recorded so far.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// Next returns the next event, failing the test after 10 s.
func (r *Recorder) Next(t testing.TB) Event {
	t.Helper()
	select {
	case ev := <-r.events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("no watcher callback within 10s")
	}
	return Event{}
}

// NextChanged returns the next event and fails unless it is a changed one.
func (r *Recorder) NextChanged(t testing.TB) Event {
	t.Helper()
	ev := r.Next(t)
	if ev.Ambient {
		t.Fatalf("got %v, want OnResourceChanged", ev)
	}
	return ev
}

// NextAmbient returns the next event and fails unless it is an ambient one.
func (r *Recorder) NextAmbient(t testing.TB) Event {
	t.Helper()
	ev := r.Next(t)
	if !ev.Ambient {
		t.Fatalf("got %v, want OnAmbientError", ev)
	}
	return ev
}

// ExpectNone fails if a callback arrives within d.
func (r *Recorder) ExpectNone(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case ev := <-r.events:
		t.Fatalf("unexpected watcher callback %v", ev)
	case <-time.After(d):
	}
}
