package engine

import (
	"slices"
	"sync"
	"testing"
)

// opOf is an operation told apart by its key, for these tests.
func opOf(key string) op { return op{key: key} }

// lockRecorder is an opLock whose run records each operation's key, and
// checks that it runs with the lock held.
type lockRecorder struct {
	t   *testing.T
	m   opLock
	ran []string
}

func newLockRecorder(t *testing.T) *lockRecorder {
	r := &lockRecorder{t: t}
	r.m.run = func(o op) {
		if r.m.mu.TryLock() {
			t.Errorf("operation %s runs with the lock free", o.key)
			r.m.mu.Unlock()
		}
		r.ran = append(r.ran, o.key)
	}
	return r
}

// TestWhenOperationsRun: an operation runs within Do when the lock is
// free, and within Unlock, in the order queued, when it is held; Lock
// runs what was queued before it returns.
func TestWhenOperationsRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(r *lockRecorder) (beforeEnd []string)
		// want ran before the scenario's end, wantAll after it.
		want, wantAll []string
	}{
		{"free", func(r *lockRecorder) []string {
			r.m.Do(opOf("1"))
			return slices.Clone(r.ran)
		}, []string{"1"}, []string{"1"}},
		{"held", func(r *lockRecorder) []string {
			r.m.Lock()
			r.m.Do(opOf("1"))
			r.m.Do(opOf("2"))
			got := slices.Clone(r.ran)
			r.m.Unlock()
			return got
		}, nil, []string{"1", "2"}},
		{"queued before Lock", func(r *lockRecorder) []string {
			r.m.queue = append(r.m.queue, opOf("1"), opOf("2")) // as a Do between an Unlock and its check
			r.m.Lock()
			got := slices.Clone(r.ran)
			r.m.Unlock()
			return got
		}, []string{"1", "2"}, []string{"1", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLockRecorder(t)
			if got := tc.run(r); !slices.Equal(got, tc.want) {
				t.Errorf("ran %v before the end, want %v", got, tc.want)
			}
			if !slices.Equal(r.ran, tc.wantAll) {
				t.Errorf("ran %v in all, want %v (in the order queued)", r.ran, tc.wantAll)
			}
		})
	}
}

// TestOpLockConcurrent: every operation handed over while others hold
// the lock runs exactly once, never alongside a holder (the race
// detector watches count).
func TestOpLockConcurrent(t *testing.T) {
	const goroutines, each = 8, 500
	var m opLock
	count := 0
	m.run = func(op) { count++ }
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if (g+i)%2 == 0 {
					m.Do(op{})
					continue
				}
				m.Lock()
				count++
				m.Unlock()
			}
		})
	}
	wg.Wait()
	m.Lock()
	defer m.Unlock()
	if count != goroutines*each {
		t.Errorf("count = %d, want %d", count, goroutines*each)
	}
}
