package lrs

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
)

// DefaultInterval is the reporting interval while the server's response
// sets none.
const DefaultInterval = 10 * time.Second

// server is the LRS stream to one server and the stores reporting to it.
type server struct {
	c      *Client
	cfg    bootstrap.ServerConfig
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	stores map[storeKey]*storeRef
}

type storeKey struct{ cluster, service string }

type storeRef struct {
	store *Store
	refs  int
}

func newServer(c *Client, cfg bootstrap.ServerConfig) *server {
	ctx, cancel := context.WithCancel(context.Background())
	return &server{c: c, cfg: cfg, ctx: ctx, cancel: cancel, stores: map[storeKey]*storeRef{}}
}

func (s *server) addStore(cluster, service string) *Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := storeKey{cluster, service}
	r := s.stores[k]
	if r == nil {
		r = &storeRef{store: newStore(cluster, service, s.c.e.Clock().Now())}
		s.stores[k] = r
	}
	r.refs++
	return r.store
}

// removeStore drops a reference; it reports whether the server has no
// store left.
func (s *server) removeStore(cluster, service string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := storeKey{cluster, service}
	if r := s.stores[k]; r != nil {
		if r.refs--; r.refs == 0 {
			delete(s.stores, k)
		}
	}
	return len(s.stores) == 0
}

func (s *server) stop() { s.cancel() }

// run keeps a stream open until stopped, with the engine's backoff
// between failed attempts, reset after a stream that got a response.
func (s *server) run() {
	defer s.c.wg.Done()
	clock := s.c.e.Clock()
	var tr engine.Transport
	defer func() {
		if tr != nil {
			tr.Close()
		}
	}()
	for retries := 0; ; {
		var responded bool
		var err error
		if tr == nil {
			// A failed build is retried like a failed stream.
			tr, err = s.c.e.NewServerTransport(s.cfg)
		}
		if tr != nil {
			responded, err = s.stream(tr)
		}
		if s.ctx.Err() != nil {
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

// stream runs one stream: the node first, then a report each interval the
// server asks for. It reports whether a response arrived.
func (s *server) stream(tr engine.Transport) (responded bool, err error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	st, err := tr.NewStream(ctx, Method)
	if err != nil {
		return false, err
	}
	first, err := proto.Marshal(&lrspb.LoadStatsRequest{Node: s.c.node()})
	if err == nil {
		err = st.Send(first)
	}
	if err != nil {
		return false, err
	}
	var recvErr error
	responses := make(chan *lrspb.LoadStatsResponse, 1)
	ended := make(chan struct{})
	var recv sync.WaitGroup
	recv.Add(1)
	go func() {
		defer recv.Done()
		defer close(ended)
		for {
			b, err := st.Recv()
			if err != nil {
				recvErr = err
				return
			}
			resp := &lrspb.LoadStatsResponse{}
			if proto.Unmarshal(b, resp) != nil {
				continue
			}
			// Only the latest settings matter.
			select {
			case <-responses:
			default:
			}
			responses <- resp
		}
	}()
	defer recv.Wait()
	defer cancel() // before Wait: ends Recv

	clock := s.c.e.Clock()
	var settings *lrspb.LoadStatsResponse
	tick := make(chan struct{}, 1)
	stopTimer := func() bool { return false }
	defer func() { stopTimer() }()
	schedule := func() {
		stopTimer()
		d := settings.GetLoadReportingInterval().AsDuration()
		if d <= 0 {
			d = DefaultInterval
		}
		stopTimer = clock.AfterFunc(d, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	for {
		select {
		case <-ctx.Done():
			return responded, ctx.Err()
		case <-ended:
			return responded, recvErr
		case settings = <-responses:
			if !responded {
				responded = true
				schedule()
			}
		case <-tick:
			if !s.report(st, settings) {
				return responded, errors.New("report not sent: the stream ended")
			}
			schedule()
		}
	}
}

// report sends one report of the stores the server asked for. A report
// that could not be sent goes back into its stores, to be sent on the
// next stream: a load is lost only if Send returned nil for it (gRPC then
// has taken the message) and the server never read it.
func (s *server) report(st engine.Stream, settings *lrspb.LoadStatsResponse) bool {
	return s.reportAt(st, settings, s.c.e.Clock().Now())
}

func (s *server) reportAt(st engine.Stream, settings *lrspb.LoadStatsResponse, now time.Time) bool {
	stores := s.storesFor(settings)
	req := &lrspb.LoadStatsRequest{}
	var taken []*Store
	var snaps []snapshot
	for _, store := range stores {
		snap := store.take(now)
		if snap.empty() {
			continue
		}
		taken, snaps = append(taken, store), append(snaps, snap)
		req.ClusterStats = append(req.ClusterStats, clusterStats(store, snap))
	}
	if len(taken) == 0 {
		return true
	}
	b, err := proto.Marshal(req)
	if err == nil {
		err = st.Send(b)
	}
	if err != nil {
		for i, store := range taken {
			store.restore(snaps[i])
		}
		return false
	}
	for _, store := range taken {
		store.lastReport = now
	}
	return true
}

// storesFor lists the stores to report, by cluster and service name:
// all with send_all_clusters, else those of the clusters listed.
func (s *server) storesFor(settings *lrspb.LoadStatsResponse) []*Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Store
	for k, r := range s.stores {
		if settings.GetSendAllClusters() || slices.Contains(settings.GetClusters(), k.cluster) {
			out = append(out, r.store)
		}
	}
	slices.SortFunc(out, func(a, b *Store) int {
		if a.cluster != b.cluster {
			return cmp.Compare(a.cluster, b.cluster)
		}
		return cmp.Compare(a.service, b.service)
	})
	return out
}

// clusterStats is a snapshot as the protocol says it.
func clusterStats(store *Store, snap snapshot) *endpointpb.ClusterStats {
	cs := &endpointpb.ClusterStats{
		ClusterName:          store.cluster,
		ClusterServiceName:   store.service,
		TotalDroppedRequests: snap.dropsTotal,
		LoadReportInterval:   durationpb.New(snap.interval),
	}
	cats := make([]string, 0, len(snap.drops))
	for c := range snap.drops {
		cats = append(cats, c)
	}
	slices.Sort(cats)
	for _, c := range cats {
		cs.DroppedRequests = append(cs.DroppedRequests, &endpointpb.ClusterStats_DroppedRequests{Category: c, DroppedCount: snap.drops[c]})
	}
	locs := make([]Locality, 0, len(snap.localities))
	for l := range snap.localities {
		locs = append(locs, l)
	}
	slices.SortFunc(locs, func(a, b Locality) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.SubZone, b.SubZone))
	})
	for _, l := range locs {
		ls := snap.localities[l]
		ul := &endpointpb.UpstreamLocalityStats{
			Locality:                &corepb.Locality{Region: l.Region, Zone: l.Zone, SubZone: l.SubZone},
			TotalSuccessfulRequests: ls.succeeded,
			TotalRequestsInProgress: uint64(max(ls.inProgress, 0)),
			TotalErrorRequests:      ls.errored,
			TotalIssuedRequests:     ls.issued,
		}
		names := make([]string, 0, len(ls.loads))
		for n := range ls.loads {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			ul.LoadMetricStats = append(ul.LoadMetricStats, &endpointpb.EndpointLoadMetricStats{
				MetricName: n, NumRequestsFinishedWithMetric: ls.loads[n].count, TotalMetricValue: ls.loads[n].sum,
			})
		}
		cs.UpstreamLocalityStats = append(cs.UpstreamLocalityStats, ul)
	}
	return cs
}
