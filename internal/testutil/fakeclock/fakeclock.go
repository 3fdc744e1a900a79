package fakeclock

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// Clock is a fake clock whose time moves only through Advance. It is safe
// for concurrent use. The zero value is not usable; call New.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64 // creation order, to break deadline ties deterministically
	timers []*timer
	// changed is closed and replaced whenever a timer is armed or time
	// moves, the only events that can satisfy a waiter, so that waiters can
	// block without polling.
	changed chan struct{}
}

type timer struct {
	deadline time.Time
	seq      uint64
	f        func()
}

// New returns a clock whose current time is start.
func New(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's current time. While a timer function runs, Now
// reports that timer's deadline, as it would (roughly) with a real clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms a timer that calls f once the clock has been advanced by
// at least d. The returned stop function disarms the timer and reports
// whether it did so, that is whether f had not yet been started; it may be
// called any number of times, from any goroutine, including from f.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{deadline: c.now.Add(d), seq: c.seq, f: f}
	c.seq++
	c.timers = append(c.timers, t)
	c.notifyLocked()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(c.timers, t)
		if i < 0 {
			return false
		}
		c.timers = slices.Delete(c.timers, i, i+1)
		return true
	}
}

// Advance moves the clock forward by d and runs every timer that falls due,
// in deadline order (timers with equal deadlines in the order they were
// armed), in the calling goroutine. Timers armed by those functions that
// fall due within the same window also run before Advance returns. The
// clock's lock is not held while a timer function runs, so timer functions
// may call any method of the clock.
//
// Advance must not be given a negative duration: a clock that went
// backwards would break the code under test in ways no real clock does.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic("fakeclock: Advance with a negative duration")
	}
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		t := c.popDueLocked(target)
		if t == nil {
			if c.now.Before(target) {
				c.now = target
				c.notifyLocked()
			}
			c.mu.Unlock()
			return
		}
		if c.now.Before(t.deadline) {
			c.now = t.deadline
			c.notifyLocked()
		}
		c.mu.Unlock()
		t.f()
	}
}

// popDueLocked removes and returns the earliest timer due at or before
// target, or nil if there is none.
func (c *Clock) popDueLocked(target time.Time) *timer {
	best := -1
	for i, t := range c.timers {
		if t.deadline.After(target) {
			continue
		}
		if best < 0 || earlier(t, c.timers[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	t := c.timers[best]
	c.timers = slices.Delete(c.timers, best, best+1)
	return t
}

func earlier(a, b *timer) bool {
	if !a.deadline.Equal(b.deadline) {
		return a.deadline.Before(b.deadline)
	}
	return a.seq < b.seq
}

// Pending returns how many timers are armed and have not yet run or been
// stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// PendingDurations returns, in ascending order, how long each pending timer
// has left before it is due. A timer already due reports zero or less.
func (c *Clock) PendingDurations() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	ds := make([]time.Duration, len(c.timers))
	for i, t := range c.timers {
		ds[i] = t.deadline.Sub(c.now)
	}
	slices.Sort(ds)
	return ds
}

// WaitForTimers blocks until at least n timers are pending or ctx is done,
// in which case it returns ctx's error. Tests use it to wait until the code
// under test, running in other goroutines, has armed its timers before they
// call Advance; advancing earlier would silently skip those timers.
func (c *Clock) WaitForTimers(ctx context.Context, n int) error {
	return c.waitFor(ctx, func() bool { return len(c.timers) >= n })
}

// WaitForTimer waits, for at most 10 seconds of real time, until a pending
// timer has exactly d left before it is due, and fails the test otherwise.
// Matching the duration, not just the count, lets a test tell apart the
// timer it means from others the code under test keeps armed.
func (c *Clock) WaitForTimer(t testing.TB, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.waitFor(ctx, func() bool {
		for _, tm := range c.timers {
			if tm.deadline.Sub(c.now) == d {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("fakeclock: no timer with %v left after 10s; pending: %v", d, c.PendingDurations())
	}
}

func (c *Clock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitFor blocks until cond, evaluated with c.mu held, is true.
func (c *Clock) waitFor(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		ok := cond()
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}
