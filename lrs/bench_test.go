package lrs

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkRecordCall measures recording one call (started, then finished)
// from every P at once, on one locality, the way a data plane records:
// through a kept *LocalityStats ("handle") or by Locality value
// ("lookup"). x-atomic is ns/op over one atomic.Int64 Add on a shared
// counter from every P, measured in the same run; lookup's x-handle is its
// ns/op over handle's, in the same run.
func BenchmarkRecordCall(b *testing.B) {
	baseline := atomicAddNs()
	var handleNs float64
	loc := Locality{Region: "us-east1", Zone: "us-east1-b"}
	for _, tc := range []struct {
		name   string
		record func(s *Store, h *LocalityStats)
	}{
		{"handle", func(_ *Store, h *LocalityStats) { h.CallStarted(); h.CallFinished(nil) }},
		{"lookup", func(s *Store, _ *LocalityStats) { s.CallStarted(loc); s.CallFinished(loc, nil) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := newStore("c", "", time.Now())
			h := s.Locality(loc)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tc.record(s, h)
				}
			})
			b.StopTimer()
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(ns/baseline, "x-atomic")
			switch tc.name {
			case "handle":
				handleNs = ns
			case "lookup":
				if handleNs > 0 {
					b.ReportMetric(ns/handleNs, "x-handle")
				}
			}
			if got := s.take(time.Now()).localities[loc].succeeded; got != uint64(b.N) {
				b.Fatalf("recorded %d calls, want %d", got, b.N)
			}
		})
	}
}

// atomicAddNs is the time of one shared atomic add from every P at once,
// per add: the best of a few rounds of GOMAXPROCS goroutines.
func atomicAddNs() float64 {
	const perG = 1 << 20
	procs := runtime.GOMAXPROCS(0)
	best := time.Duration(1<<63 - 1)
	for range 5 {
		var n atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perG {
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds()) / float64(procs*perG)
}
