package lrs

import (
	"sync"
	"sync/atomic"
	"time"
)

// Locality names where calls went: an EDS locality.
type Locality struct {
	Region, Zone, SubZone string
}

// Store holds the load of one cluster and EDS service name: what a data
// plane records, call by call, and what the reporter sends and resets
// each interval. Record calls on the [LocalityStats] of each locality,
// kept ([Store.Locality]). Its methods are safe for concurrent use by
// any number of goroutines.
type Store struct {
	cluster, service string

	localities sync.Map // Locality → *LocalityStats
	dropsMu    sync.Mutex
	drops      map[string]uint64 // category → count since the last report
	dropsTotal atomic.Uint64     // every drop, categorized or not

	// lastReport is when the last report of this store was sent (or the
	// store created): the start of the interval the next one covers.
	lastReport time.Time
}

func newStore(cluster, service string, now time.Time) *Store {
	return &Store{cluster: cluster, service: service, drops: map[string]uint64{}, lastReport: now}
}

// Cluster returns the cluster name the store reports for.
func (s *Store) Cluster() string { return s.cluster }

// Service returns the EDS service name the store reports for.
func (s *Store) Service() string { return s.service }

// Locality returns the counters of one locality. Keep the result for the
// locality's calls and record them on it: recording is then a few atomic
// additions, with no lookup.
func (s *Store) Locality(l Locality) *LocalityStats {
	if v, ok := s.localities.Load(l); ok {
		return v.(*LocalityStats)
	}
	v, _ := s.localities.LoadOrStore(l, &LocalityStats{})
	return v.(*LocalityStats)
}

// CallStarted records a call to an endpoint of locality l. It looks l up
// on every call, which costs several times the recording itself: keep
// [Store.Locality]'s result instead where the locality is known ahead.
func (s *Store) CallStarted(l Locality) { s.Locality(l).CallStarted() }

// CallFinished records the end of a call to locality l; err is its
// outcome. It looks l up, as CallStarted does.
func (s *Store) CallFinished(l Locality, err error) { s.Locality(l).CallFinished(err) }

// CallServerLoad records a named load metric reported for a call to
// locality l (ORCA's named metrics, as gRPC reports them). It looks l
// up, as CallStarted does.
func (s *Store) CallServerLoad(l Locality, name string, value float64) {
	s.Locality(l).CallServerLoad(name, value)
}

// CallDropped records a call dropped by the client's drop policy;
// category is the drop_overloads category, or "" for none.
func (s *Store) CallDropped(category string) {
	s.dropsTotal.Add(1)
	if category == "" {
		return
	}
	s.dropsMu.Lock()
	s.drops[category]++
	s.dropsMu.Unlock()
}

// LocalityStats are one locality's counters.
type LocalityStats struct {
	inProgress atomic.Int64 // a gauge: not reset by reports
	issued     atomic.Uint64
	succeeded  atomic.Uint64
	errored    atomic.Uint64

	loadsMu sync.Mutex
	loads   map[string]loadSum
}

type loadSum struct {
	count uint64
	sum   float64
}

// CallStarted records a call.
func (l *LocalityStats) CallStarted() {
	l.inProgress.Add(1)
	l.issued.Add(1)
}

// CallFinished records the end of a call; a non-nil err counts it as
// failed.
func (l *LocalityStats) CallFinished(err error) {
	l.inProgress.Add(-1)
	if err != nil {
		l.errored.Add(1)
	} else {
		l.succeeded.Add(1)
	}
}

// CallServerLoad records a named load metric of a call.
func (l *LocalityStats) CallServerLoad(name string, value float64) {
	l.loadsMu.Lock()
	if l.loads == nil {
		l.loads = make(map[string]loadSum)
	}
	ls := l.loads[name]
	ls.count++
	ls.sum += value
	l.loads[name] = ls
	l.loadsMu.Unlock()
}

// snapshot is what one report of a store says: the counts since the last
// report, taken and reset at once, so that each call is reported once.
type snapshot struct {
	localities map[Locality]localitySnapshot
	drops      map[string]uint64
	dropsTotal uint64
	interval   time.Duration
	takenAt    time.Time
}

type localitySnapshot struct {
	inProgress                 int64
	issued, succeeded, errored uint64
	loads                      map[string]loadSum
}

// take resets the store's counts into a snapshot.
func (s *Store) take(now time.Time) snapshot {
	snap := snapshot{localities: map[Locality]localitySnapshot{}, interval: now.Sub(s.lastReport), takenAt: now}
	s.localities.Range(func(k, v any) bool {
		l := v.(*LocalityStats)
		ls := localitySnapshot{
			inProgress: l.inProgress.Load(),
			issued:     l.issued.Swap(0),
			succeeded:  l.succeeded.Swap(0),
			errored:    l.errored.Swap(0),
		}
		l.loadsMu.Lock()
		ls.loads, l.loads = l.loads, nil
		l.loadsMu.Unlock()
		snap.localities[k.(Locality)] = ls
		return true
	})
	s.dropsMu.Lock()
	snap.drops, s.drops = s.drops, map[string]uint64{}
	s.dropsMu.Unlock()
	snap.dropsTotal = s.dropsTotal.Swap(0)
	return snap
}

// restart drops what the store has recorded, but for the calls in
// progress, and begins its period at now: it is billed from then on.
func (s *Store) restart(now time.Time) {
	s.take(now)
	s.lastReport = now
}

// restore puts back a snapshot whose report could not be sent, so that
// its counts go in the next one instead of being lost.
func (s *Store) restore(snap snapshot) {
	for k, ls := range snap.localities {
		l := s.Locality(k)
		l.issued.Add(ls.issued)
		l.succeeded.Add(ls.succeeded)
		l.errored.Add(ls.errored)
		if len(ls.loads) > 0 {
			l.loadsMu.Lock()
			if l.loads == nil {
				l.loads = make(map[string]loadSum)
			}
			for name, add := range ls.loads {
				cur := l.loads[name]
				l.loads[name] = loadSum{count: cur.count + add.count, sum: cur.sum + add.sum}
			}
			l.loadsMu.Unlock()
		}
	}
	s.dropsMu.Lock()
	for c, n := range snap.drops {
		s.drops[c] += n
	}
	s.dropsMu.Unlock()
	s.dropsTotal.Add(snap.dropsTotal)
}

// empty reports whether a snapshot has nothing to say: no call, no drop,
// nothing in progress.
func (snap snapshot) empty() bool {
	if snap.dropsTotal > 0 {
		return false
	}
	for _, ls := range snap.localities {
		if ls.inProgress != 0 || ls.issued != 0 || ls.succeeded != 0 || ls.errored != 0 || len(ls.loads) > 0 {
			return false
		}
	}
	return true
}
