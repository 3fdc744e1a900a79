package oplock

import (
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a Mutex whose Run records each operation, and checks that
// it runs with the mutex held.
type recorder struct {
	t   *testing.T
	m   Mutex[int]
	ran []int
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{t: t}
	r.m.Run = func(o int) {
		if r.m.mu.TryLock() {
			t.Errorf("operation %d runs with the mutex free", o)
			r.m.mu.Unlock()
		}
		r.ran = append(r.ran, o)
	}
	return r
}

// TestWhenOperationsRun: an operation runs within Do when the mutex is
// free, and within Unlock, in the order queued, when it is held; Lock
// runs what was queued before it returns.
func TestWhenOperationsRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(r *recorder) (beforeEnd []int)
		// want ran before the scenario's end, wantAll after it.
		want, wantAll []int
	}{
		{"free", func(r *recorder) []int {
			r.m.Do(1)
			return slices.Clone(r.ran)
		}, []int{1}, []int{1}},
		{"held", func(r *recorder) []int {
			r.m.Lock()
			r.m.Do(1)
			r.m.Do(2)
			got := slices.Clone(r.ran)
			r.m.Unlock()
			return got
		}, nil, []int{1, 2}},
		{"queued before Lock", func(r *recorder) []int {
			r.m.queue = append(r.m.queue, 1, 2) // as a Do between an Unlock and its check
			r.m.Lock()
			got := slices.Clone(r.ran)
			r.m.Unlock()
			return got
		}, []int{1, 2}, []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(t)
			if got := tc.run(r); !slices.Equal(got, tc.want) {
				t.Errorf("ran %v before the end, want %v", got, tc.want)
			}
			if !slices.Equal(r.ran, tc.wantAll) {
				t.Errorf("ran %v in all, want %v (in the order queued)", r.ran, tc.wantAll)
			}
		})
	}
}

// TestConcurrent: every operation handed over while others hold the
// mutex runs exactly once, never alongside a holder (the race detector
// watches count).
func TestConcurrent(t *testing.T) {
	const goroutines, each = 8, 500
	var m Mutex[int]
	count := 0
	m.Run = func(n int) { count += n }
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if (g+i)%2 == 0 {
					m.Do(1)
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
