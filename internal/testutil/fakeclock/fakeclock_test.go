package fakeclock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The engine's Clock interface, restated so that this package need not
// import the engine: *Clock must keep satisfying it.
var _ interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
} = (*fakeclock.Clock)(nil)

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAdvanceOrdering(t *testing.T) {
	type arm struct {
		name string
		d    time.Duration
	}
	tests := []struct {
		name     string
		arms     []arm
		advances []time.Duration
		// want holds, for each Advance, the timers it ran, in order.
		want [][]string
	}{
		{
			name:     "deadline order",
			arms:     []arm{{"c", 3 * time.Second}, {"a", time.Second}, {"b", 2 * time.Second}},
			advances: []time.Duration{5 * time.Second},
			want:     [][]string{{"a", "b", "c"}},
		},
		{
			name:     "ties run in creation order",
			arms:     []arm{{"x", time.Second}, {"y", time.Second}, {"z", time.Second}},
			advances: []time.Duration{time.Second},
			want:     [][]string{{"x", "y", "z"}},
		},
		{
			name:     "only due timers run",
			arms:     []arm{{"a", time.Second}, {"b", 2 * time.Second}, {"c", 3 * time.Second}},
			advances: []time.Duration{time.Second, 500 * time.Millisecond, 500 * time.Millisecond, time.Hour},
			want:     [][]string{{"a"}, nil, {"b"}, {"c"}},
		},
		{
			name:     "non-positive durations wait for Advance",
			arms:     []arm{{"neg", -time.Second}, {"zero", 0}, {"later", time.Nanosecond}},
			advances: []time.Duration{0, time.Nanosecond},
			want:     [][]string{{"neg", "zero"}, {"later"}},
		},
		{
			name:     "nothing armed",
			advances: []time.Duration{time.Second},
			want:     [][]string{nil},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New(epoch)
			var ran []string
			for _, a := range tc.arms {
				clk.AfterFunc(a.d, func() { ran = append(ran, a.name) })
			}
			if len(tc.arms) > 0 && len(ran) != 0 {
				t.Fatalf("AfterFunc ran timers by itself: %v", ran)
			}
			var got [][]string
			for _, d := range tc.advances {
				ran = nil
				clk.Advance(d)
				got = append(got, ran)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("timers run per Advance (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNow(t *testing.T) {
	clk := fakeclock.New(epoch)
	if got := clk.Now(); !got.Equal(epoch) {
		t.Fatalf("Now() = %v, want %v", got, epoch)
	}
	var during time.Time
	clk.AfterFunc(2*time.Second, func() { during = clk.Now() })
	clk.Advance(5 * time.Second)
	if want := epoch.Add(2 * time.Second); !during.Equal(want) {
		t.Errorf("Now() inside timer = %v, want its deadline %v", during, want)
	}
	if want := epoch.Add(5 * time.Second); !clk.Now().Equal(want) {
		t.Errorf("Now() after Advance = %v, want %v", clk.Now(), want)
	}
}

func TestAdvanceNegativePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Advance(-1) did not panic")
		}
	}()
	fakeclock.New(epoch).Advance(-1)
}

func TestStop(t *testing.T) {
	tests := []struct {
		name string
		// do runs the scenario and returns what the stop calls reported.
		do        func(clk *fakeclock.Clock, f func()) []bool
		wantStops []bool
		wantRuns  int
	}{
		{
			name: "before due",
			do: func(clk *fakeclock.Clock, f func()) []bool {
				stop := clk.AfterFunc(time.Second, f)
				r := stop()
				clk.Advance(time.Hour)
				return []bool{r, stop()}
			},
			wantStops: []bool{true, false},
			wantRuns:  0,
		},
		{
			name: "after run",
			do: func(clk *fakeclock.Clock, f func()) []bool {
				stop := clk.AfterFunc(time.Second, f)
				clk.Advance(time.Second)
				return []bool{stop()}
			},
			wantStops: []bool{false},
			wantRuns:  1,
		},
		{
			name: "from inside its own function",
			do: func(clk *fakeclock.Clock, f func()) []bool {
				var got bool
				var stop func() bool
				stop = clk.AfterFunc(time.Second, func() { f(); got = stop() })
				clk.Advance(time.Second)
				return []bool{got}
			},
			wantStops: []bool{false},
			wantRuns:  1,
		},
		{
			name: "a later timer stopped by an earlier one in the same Advance",
			do: func(clk *fakeclock.Clock, f func()) []bool {
				var got bool
				stopLater := clk.AfterFunc(2*time.Second, f)
				clk.AfterFunc(time.Second, func() { got = stopLater() })
				clk.Advance(3 * time.Second)
				return []bool{got}
			},
			wantStops: []bool{true},
			wantRuns:  0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New(epoch)
			runs := 0
			got := tc.do(clk, func() { runs++ })
			if diff := cmp.Diff(tc.wantStops, got); diff != "" {
				t.Errorf("stop results (-want +got):\n%s", diff)
			}
			if runs != tc.wantRuns {
				t.Errorf("timer ran %d times, want %d", runs, tc.wantRuns)
			}
			if n := clk.Pending(); n != 0 {
				t.Errorf("Pending() = %d, want 0", n)
			}
		})
	}
}

func TestReentrantTimers(t *testing.T) {
	tests := []struct {
		name        string
		rearm       time.Duration // what the first timer arms from inside
		advance     time.Duration
		wantRan     []string
		wantPending []time.Duration
	}{
		{
			name:    "falls due within the same Advance",
			rearm:   2 * time.Second,
			advance: 5 * time.Second,
			wantRan: []string{"first", "second"},
		},
		{
			name:    "due exactly at the end of the Advance",
			rearm:   4 * time.Second,
			advance: 5 * time.Second,
			wantRan: []string{"first", "second"},
		},
		{
			name:    "zero duration runs at once",
			rearm:   0,
			advance: time.Second,
			wantRan: []string{"first", "second"},
		},
		{
			name:        "beyond the Advance stays pending",
			rearm:       10 * time.Second,
			advance:     5 * time.Second,
			wantRan:     []string{"first"},
			wantPending: []time.Duration{6 * time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New(epoch)
			var ran []string
			clk.AfterFunc(time.Second, func() {
				ran = append(ran, "first")
				clk.AfterFunc(tc.rearm, func() { ran = append(ran, "second") })
			})
			clk.Advance(tc.advance)
			if diff := cmp.Diff(tc.wantRan, ran); diff != "" {
				t.Errorf("timers run (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPending, clk.PendingDurations(), cmpEmpty); diff != "" {
				t.Errorf("PendingDurations (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpEmpty = cmp.FilterValues(func(a, b []time.Duration) bool {
	return len(a) == 0 && len(b) == 0
}, cmp.Ignore())

func TestPendingDurations(t *testing.T) {
	clk := fakeclock.New(epoch)
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		clk.AfterFunc(d, func() {})
	}
	clk.Advance(500 * time.Millisecond)
	want := []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 2500 * time.Millisecond}
	if diff := cmp.Diff(want, clk.PendingDurations()); diff != "" {
		t.Errorf("PendingDurations (-want +got):\n%s", diff)
	}
	if got := clk.Pending(); got != 3 {
		t.Errorf("Pending() = %d, want 3", got)
	}
}

func TestWaitForTimers(t *testing.T) {
	tests := []struct {
		name    string
		already int // timers armed before waiting
		later   int // timers armed by another goroutine while waiting
		n       int
		wantErr error
	}{
		{name: "already there", already: 2, n: 2},
		{name: "zero needs nothing", n: 0},
		{name: "armed concurrently", already: 1, later: 2, n: 3},
		{name: "never armed", already: 1, n: 2, wantErr: context.DeadlineExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New(epoch)
			for range tc.already {
				clk.AfterFunc(time.Second, func() {})
			}
			var wg sync.WaitGroup
			wg.Go(func() {
				for range tc.later {
					time.Sleep(5 * time.Millisecond)
					clk.AfterFunc(time.Second, func() {})
				}
			})
			defer wg.Wait()
			timeout := 10 * time.Second
			if tc.wantErr != nil {
				timeout = 50 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := clk.WaitForTimers(ctx, tc.n); !errors.Is(err, tc.wantErr) {
				t.Fatalf("WaitForTimers(%d) = %v, want %v", tc.n, err, tc.wantErr)
			}
		})
	}
}

func TestWaitForTimer(t *testing.T) {
	clk := fakeclock.New(epoch)
	clk.AfterFunc(time.Second, func() {})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		time.Sleep(10 * time.Millisecond)
		clk.AfterFunc(30*time.Second, func() {})
	})
	clk.WaitForTimer(t, 30*time.Second)
	// Time moving can also make a timer's remaining duration match.
	wg.Go(func() {
		time.Sleep(10 * time.Millisecond)
		clk.Advance(10 * time.Second)
	})
	clk.WaitForTimer(t, 20*time.Second)
}

// TestConcurrentUse gives the race detector something to look at: the
// code under test arms and stops timers from many goroutines while the
// test advances.
func TestConcurrentUse(t *testing.T) {
	clk := fakeclock.New(epoch)
	var (
		mu    sync.Mutex
		fired int
		wg    sync.WaitGroup
	)
	const workers, perWorker = 8, 50
	stopped := make([]int, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				stop := clk.AfterFunc(time.Duration(i)*time.Millisecond, func() {
					mu.Lock()
					fired++
					mu.Unlock()
				})
				if i%2 == 0 && stop() {
					stopped[w]++
				}
				_ = clk.Now()
				_ = clk.PendingDurations()
			}
		})
	}
	for range 20 {
		clk.Advance(time.Millisecond)
	}
	wg.Wait()
	clk.Advance(time.Hour)
	total := 0
	for _, s := range stopped {
		total += s
	}
	if fired+total != workers*perWorker {
		t.Errorf("fired %d + stopped %d != armed %d", fired, total, workers*perWorker)
	}
	if n := clk.Pending(); n != 0 {
		t.Errorf("Pending() = %d after advancing past every deadline", n)
	}
}
