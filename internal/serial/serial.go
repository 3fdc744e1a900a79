package serial

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// Serializer runs callbacks one at a time, in the order they were
// scheduled, on a goroutine of its own. Scheduling never blocks: the queue
// is unbounded, so the engine can schedule while holding its lock and the
// order watchers see is the order the engine decided in.
type Serializer struct {
	mu     sync.Mutex
	queue  []Job
	wake   chan struct{}
	closed bool
	// dropped: Close dropped the queue, including the batch being run.
	dropped atomic.Bool
	stopped chan struct{}
	// goid is the serializer goroutine's ID, so that Close can tell it is
	// being called from a callback, which it must not wait for.
	goid atomic.Uint64
}

// New starts a serializer; Close or CloseAsync ends its goroutine.
func New() *Serializer {
	s := &Serializer{wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	started := make(chan struct{})
	go func() {
		s.goid.Store(goroutineID())
		close(started)
		s.run()
	}()
	<-started
	return s
}

// InCallback reports whether the calling goroutine is the serializer's,
// that is whether the caller is a callback.
func (s *Serializer) InCallback() bool { return goroutineID() == s.goid.Load() }

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

// Job is a callback with its state: a caller that schedules many keeps
// each in one object of its own, where a func would need a closure too.
type Job interface{ Run() }

// funcJob is a func as a Job; a func value is a pointer, so the
// conversion allocates nothing.
type funcJob func()

func (f funcJob) Run() { f() }

// Schedule queues f; it reports false, without queueing, after close.
func (s *Serializer) Schedule(f func()) bool { return s.ScheduleJob(funcJob(f)) }

// ScheduleJob queues j, like Schedule.
func (s *Serializer) ScheduleJob(j Job) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, j)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

func (s *Serializer) run() {
	defer close(s.stopped)
	var batch []Job
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
		// The whole queue at once, handing back the last batch's array:
		// one lock per batch, and no queue regrown for every response.
		batch, s.queue = s.queue, batch[:0]
		s.mu.Unlock()
		for i, j := range batch {
			batch[i] = nil
			if s.dropped.Load() {
				continue // Close dropped what was queued
			}
			j.Run()
		}
	}
}

// Close stops accepting callbacks, drops the queued ones and waits for the
// running one to return, unless it is the caller: called from a callback,
// it returns at once, and the goroutine ends when the callback returns.
func (s *Serializer) Close() {
	s.mu.Lock()
	s.closed = true
	s.dropped.Store(true)
	s.queue = nil
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if !s.InCallback() {
		<-s.stopped
	}
}

// CloseAsync stops accepting callbacks; the queued ones still run and the
// goroutine ends after them. It does not wait, so a callback may call it.
func (s *Serializer) CloseAsync() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
