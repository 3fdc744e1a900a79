package lrs

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/transport"
)

// report sends one report of the stores the server asks for, those with
// something to say; it reports whether it sent one. A report that could
// not be sent goes back into its stores, to be sent on the next stream:
// a load is lost only if Send returned nil for it (gRPC then has taken
// the message) and the server never read it.
func (s *server) report(st transport.Stream) (sent bool, err error) {
	return s.reportAt(st, s.c.e.Clock().Now())
}

func (s *server) reportAt(st transport.Stream, now time.Time) (sent bool, err error) {
	stores, _ := s.due()
	req := &lrspb.LoadStatsRequest{}
	var taken, idle []*Store
	var snaps []snapshot
	for _, store := range stores {
		snap := store.take(now)
		if snap.empty() {
			idle = append(idle, store)
			continue
		}
		taken, snaps = append(taken, store), append(snaps, snap)
		req.ClusterStats = append(req.ClusterStats, clusterStats(store, snap))
	}
	if len(taken) > 0 {
		b, err := proto.Marshal(req)
		if err == nil {
			err = st.Send(b)
		}
		if err != nil {
			for i, store := range taken {
				store.restore(snaps[i])
			}
			return false, fmt.Errorf("report not sent: %w", err)
		}
		for _, store := range taken {
			store.lastReport = now
		}
	}
	s.reported(append(taken, idle...))
	return len(taken) > 0, nil
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
