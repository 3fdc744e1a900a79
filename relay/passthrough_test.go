package relay_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/passthrough"
	"github.com/xdsengine/xdsengine/xdstest"
)

// istiodProxylessListener is the Listener istiod sends a proxyless gRPC
// client (pilot/pkg/networking/grpcgen): an api_listener whose connection
// manager has no stat_prefix (gRPC ignores it, Envoy's rules require it),
// with gRPC's fault and router filters, and its routes on RDS over ADS
// or, with inline, in it.
func istiodProxylessListener(name, route, cluster string, inline bool) *listenerpb.Listener {
	hcm := &hcmpb.HttpConnectionManager{
		RouteSpecifier: &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{RouteConfigName: route,
			ConfigSource: &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}}},
		HttpFilters: []*hcmpb.HttpFilter{
			{Name: "envoy.filters.http.fault", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: anyOf(&faultpb.HTTPFault{})}},
			{Name: "envoy.filters.http.router", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: anyOf(&routerpb.Router{})}},
		},
	}
	if inline {
		hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_RouteConfig{RouteConfig: xdstest.RouteConfig(route, cluster)}
	}
	return &listenerpb.Listener{Name: name, ApiListener: &listenerpb.ApiListener{ApiListener: anyOf(hcm)}}
}

// TestPassthroughServesGRPC: a relay of the pass-through types, whose
// default validation is structural, relays istiod's Listener for
// proxyless gRPC, which Envoy's rules (PGV) reject, to grpc-go's own xDS
// client, whose RPCs then reach the backend, and to an xdsengine client;
// the upstream sees no NACK.
func TestPassthroughServesGRPC(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inline bool
	}{
		{"routes on RDS", false},
		{"routes inline", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			one := backend(t, "one")
			up := newUpstream(t, "upstream")
			resources := []xdstest.Resource{
				xdstest.R("service", istiodProxylessListener("service", "route-1", "cluster-1", tc.inline)),
				xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-1")),
				xdstest.R("eds-1", xdstest.ClusterLoadAssignment("eds-1", xdstest.Locality{Zone: "a", Endpoints: []string{one}})),
			}
			if !tc.inline {
				resources = append(resources, xdstest.R("route-1", xdstest.RouteConfig("route-1", "cluster-1")))
			}
			up.Set(resources...)
			r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) { c.Upstream.Registry = passthrough.Registry() })

			hc := healthpb.NewHealthClient(grpcGoClient(t, r))
			waitUntil(t, "grpc-go's RPC through the relay to backend one", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "one"})
				return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
			})
			listener := watch(t, client(t, r, relaytest.BootstrapOptions{NodeID: "engine", Cluster: "blue"}), lds.TypeURL, "service")
			listener.waitFor(t, "the listener", func(res registry.Resource, err error) bool { return err == nil && res != nil })
			listener.kept(t, "relayed by structural validation")
			if n := len(up.NACKs()); n != 0 {
				t.Errorf("the relay NACKed %d upstream responses: %v", n, up.NACKs()[0].GetErrorDetail().GetMessage())
			}
			if s := keyStatus(t, r.Relay()); s.UpstreamNACKs != 0 {
				t.Errorf("the relay counts %d upstream NACKs, want none: %+v", s.UpstreamNACKs, s)
			}
		})
	}
}

// staticCluster is a cluster gRPC's rules, those of the built-in types,
// reject: STATIC discovery.
func staticCluster(name string) *clusterpb.Cluster {
	return &clusterpb.Cluster{Name: name, ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC}}
}

// TestUpstreamNACKStatus: a resource the relay's engine rejects (NACKs)
// upstream shows in Relay.Status (a count, the last error and its time)
// and in the metrics, each rejection once, whether the relay had the
// resource (its clients keep it) or not, and whether a name's or a
// wildcard's watcher heard of it, or both; the upstream stays connected,
// without error, for a NACK is no outage.
func TestUpstreamNACKStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		// good is served first, and the client waits for it; bad then
		// replaces the upstream's clusters.
		good, bad []xdstest.Resource
		// names subscribed by one client each; nil is a wildcard one.
		clients [][]string
		// rejected is the cluster NACKed.
		rejected string
	}{
		{name: "a cluster the relay never had", bad: []xdstest.Resource{xdstest.R("bad", staticCluster("bad"))},
			clients: [][]string{{"bad"}}, rejected: "bad"},
		{name: "an update of a cluster the relay serves", good: clusters("cluster-1"),
			bad: []xdstest.Resource{xdstest.R("cluster-1", staticCluster("cluster-1"))}, clients: [][]string{{"cluster-1"}}, rejected: "cluster-1"},
		{name: "a cluster a wildcard never had", bad: []xdstest.Resource{xdstest.R("bad", staticCluster("bad"))},
			clients: [][]string{nil}, rejected: "bad"},
		{name: "an update of a cluster a wildcard serves", good: clusters("cluster-1"),
			bad: []xdstest.Resource{xdstest.R("cluster-1", staticCluster("cluster-1"))}, clients: [][]string{nil}, rejected: "cluster-1"},
		{name: "an update of a cluster served by name and wildcard", good: clusters("cluster-1"),
			bad: []xdstest.Resource{xdstest.R("cluster-1", staticCluster("cluster-1"))}, clients: [][]string{nil, {"cluster-1"}}, rejected: "cluster-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, "upstream")
			if tc.good != nil {
				up.Set(tc.good...)
			}
			clk := fakeclock.New(time.Unix(1000, 0))
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { mp.Shutdown(context.Background()) })
			r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) { c.MeterProvider = mp; c.Clock = clk })
			var streams []*sotwStream
			for i, names := range tc.clients {
				s := openSotw(t, r.Addr())
				s.request(t, &discoverypb.DiscoveryRequest{Node: node(string(rune('a'+i)), "blue"), TypeUrl: cds.TypeURL, ResourceNames: names})
				if tc.good != nil {
					first := s.next(t)
					s.request(t, &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: names,
						VersionInfo: first.GetVersionInfo(), ResponseNonce: first.GetNonce()})
				}
				streams = append(streams, s)
			}
			waitUntil(t, "the clients' watches", func() bool {
				st := r.Relay().Status()
				return len(st) == 1 && st[0].Watches == len(tc.clients)
			})
			if s := keyStatus(t, r.Relay()); s.UpstreamNACKs != 0 || s.LastNACK != nil {
				t.Fatalf("status before any NACK: %+v", s)
			}

			clk.Advance(time.Second) // within the linger: nothing is reaped
			if tc.good != nil {
				up.Update(cds.TypeURL, tc.bad...)
			} else {
				up.Set(tc.bad...)
			}
			if _, err := up.WaitForRequest(ctxFor(t), xdstest.IsNACK(cds.TypeURL)); err != nil {
				t.Fatalf("the relay did not NACK the STATIC cluster: %v", err)
			}
			// Each response NACKed holds one bad cluster: as many
			// rejections as NACKs, once the relay has heard of them.
			counted := func() bool { return keyStatus(t, r.Relay()).UpstreamNACKs == len(up.NACKs()) }
			waitUntil(t, "the relay to count the NACKs the upstream got", counted)
			time.Sleep(quiet) // a NACK counted twice would show by then
			if !counted() {
				t.Errorf("the relay counts %d NACKs, the upstream got %d", keyStatus(t, r.Relay()).UpstreamNACKs, len(up.NACKs()))
			}
			s := keyStatus(t, r.Relay())
			var e *engine.Error
			if !errors.As(s.LastNACK, &e) || e.Kind != engine.KindNACK || e.Name != tc.rejected ||
				status.Code(s.LastNACK) != codes.InvalidArgument || !strings.Contains(s.LastNACK.Error(), "STATIC") {
				t.Errorf("LastNACK = %v, want the engine's NACK of the STATIC cluster %s", s.LastNACK, tc.rejected)
			}
			if want := time.Unix(1000, 0).Add(time.Second); !s.LastNACKAt.Equal(want) {
				t.Errorf("LastNACKAt = %v, want %v (the relay's clock)", s.LastNACKAt, want)
			}
			if !s.Connected || s.Err != nil {
				t.Errorf("a NACK shows as an outage: connected %v, error %v", s.Connected, s.Err)
			}
			if n := sumOf(t, reader, relay.MetricUpstreamNACKs); n != int64(s.UpstreamNACKs) {
				t.Errorf("%s = %d, want %d", relay.MetricUpstreamNACKs, n, s.UpstreamNACKs)
			}
			if tc.good != nil {
				// The clients keep what they had: nothing changed for
				// them, so nothing was sent.
				for _, st := range streams {
					st.none(t, 10*time.Millisecond)
				}
			}
		})
	}
}
