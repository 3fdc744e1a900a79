package lrs

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/transport"
)

// DefaultInterval is the reporting interval while the server's latest
// response sets none: its load_reporting_interval is unset, zero,
// negative or not a valid duration.
const DefaultInterval = 10 * time.Second

// FinalReportTimeout bounds a stream's final report, on the engine's
// clock: after the last cancel of a server's stores (or Close), the
// stream has that long to send the load not yet reported and see the
// server read it (or, before the server's first response, to learn what
// to report). The stream then ends, with the report or without it. It is
// grpc-go's bound for the same wait.
const FinalReportTimeout = time.Second

// server is the LRS stream to one server and the stores reporting to it.
type server struct {
	c   *Client
	cfg bootstrap.ServerConfig
	// ctx ends the stream at once: at FinalReportTimeout after finish, or
	// when the goroutine returns.
	ctx    context.Context
	cancel context.CancelFunc
	// finishing is closed when the last store is released: the stream
	// sends its final report, then ends.
	finishing  chan struct{}
	finishOnce sync.Once

	mu     sync.Mutex
	stores map[storeKey]*storeRef
	refs   int // ReportLoad calls not yet cancelled, over every store
	// settings is the server's latest response, on any of its streams;
	// nil until the first.
	settings     *lrspb.LoadStatsResponse
	stopDeadline func() bool // the FinalReportTimeout timer, once armed
}

type storeKey struct{ cluster, service string }

type storeRef struct {
	store *Store
	// refs counts its ReportLoad calls not yet cancelled. A store whose
	// refs are all cancelled is kept until its load is reported.
	refs int
	// excluded: the server's latest response does not ask for this
	// store's cluster. Its load is not reported, and is dropped when a
	// response asks for it again.
	excluded bool
}

func newServer(c *Client, cfg bootstrap.ServerConfig) *server {
	ctx, cancel := context.WithCancel(context.Background())
	return &server{c: c, cfg: cfg, ctx: ctx, cancel: cancel, finishing: make(chan struct{}), stores: map[storeKey]*storeRef{}}
}

// asks reports whether a response asks for the load of cluster.
func asks(resp *lrspb.LoadStatsResponse, cluster string) bool {
	return resp.GetSendAllClusters() || slices.Contains(resp.GetClusters(), cluster)
}

// interval is the reporting period a response sets.
func interval(resp *lrspb.LoadStatsResponse) time.Duration {
	d := resp.GetLoadReportingInterval()
	if d.CheckValid() != nil || d.AsDuration() <= 0 {
		return DefaultInterval
	}
	return d.AsDuration()
}

func (s *server) addStore(cluster, service string) *Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := storeKey{cluster, service}
	r := s.stores[k]
	if r == nil {
		// Billed from now on: a store that the latest response asks for
		// begins its first period when it is made.
		r = &storeRef{store: newStore(cluster, service, s.c.e.Clock().Now())}
		r.excluded = s.settings != nil && !asks(s.settings, cluster)
		s.stores[k] = r
	}
	r.refs++
	s.refs++
	return r.store
}

// releaseStore drops a reference; it reports whether it was the server's
// last. A store without references stays until its load is reported,
// unless the server does not ask for it.
func (s *server) releaseStore(cluster, service string) (last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := storeKey{cluster, service}
	if r := s.stores[k]; r != nil && r.refs > 0 {
		r.refs--
		s.refs--
		if r.refs == 0 && r.excluded {
			delete(s.stores, k)
		}
	}
	return s.refs == 0
}

// applySettings makes resp the server's settings: it begins a period. A
// store new to its list is billed from now on: what it recorded while
// the server did not ask for it is dropped, as Envoy's
// load_stats_reporter drops it. A store asked for before keeps what it
// recorded since its last report.
func (s *server) applySettings(resp *lrspb.LoadStatsResponse, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settings = resp
	for k, r := range s.stores {
		asked := asks(resp, k.cluster)
		if asked && r.excluded {
			r.store.restart(now)
		}
		if !asked && r.refs == 0 {
			delete(s.stores, k) // no longer asked for: its load will never be reported
		}
		r.excluded = !asked
	}
}

// reported drops the stores without references whose load has been
// reported, unless ReportLoad asked for them again meanwhile.
func (s *server) reported(stores []*Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range stores {
		k := storeKey{st.cluster, st.service}
		if r := s.stores[k]; r != nil && r.store == st && r.refs == 0 {
			delete(s.stores, k)
		}
	}
}

// due lists the stores the server's settings ask for, by cluster and
// service name, and the settings (nil before the first response).
func (s *server) due() ([]*Store, *lrspb.LoadStatsResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settings == nil {
		return nil, nil
	}
	var out []*Store
	for _, r := range s.stores {
		if !r.excluded {
			out = append(out, r.store)
		}
	}
	slices.SortFunc(out, func(a, b *Store) int {
		return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.service, b.service))
	})
	return out, s.settings
}

// finish starts the stream's end: a final report, bounded by
// FinalReportTimeout.
func (s *server) finish() {
	s.finishOnce.Do(func() {
		// Armed first, so that run, which may end as soon as finishing is
		// closed, finds the timer to stop.
		stop := s.c.e.Clock().AfterFunc(FinalReportTimeout, s.cancel)
		s.mu.Lock()
		s.stopDeadline = stop
		s.mu.Unlock()
		close(s.finishing)
	})
}

// run keeps a stream open until it has sent its final report or is
// stopped, with the engine's backoff between failed attempts, reset
// after a stream that got a response.
func (s *server) run() {
	defer s.c.wg.Done()
	defer func() {
		s.cancel()
		s.mu.Lock()
		stop := s.stopDeadline
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
	}()
	clock := s.c.e.Clock()
	var tr transport.Transport
	release := func() {}
	defer func() { release() }()
	for retries := 0; ; {
		var responded, done bool
		var err error
		if tr == nil {
			// A failed build is retried like a failed stream.
			tr, release, err = s.c.transport(s.cfg)
			if err != nil {
				release = func() {}
			}
		}
		if tr != nil {
			responded, done, err = s.stream(tr)
		}
		if done || s.ctx.Err() != nil {
			return
		}
		s.c.e.Logger().Warn("LRS stream failed; retrying", "server", s.cfg.URI, "error", err, "retry", retries)
		if responded {
			retries = 0
		}
		wake := make(chan struct{})
		stopTimer := clock.AfterFunc(s.c.e.Backoff(retries), func() { close(wake) })
		select {
		case <-s.ctx.Done():
			stopTimer()
			return
		case <-wake:
		}
		if !responded {
			retries++
		}
	}
}
