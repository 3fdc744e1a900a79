package relay_test

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// hashFunc keys go-control-plane's snapshot cache.
type hashFunc func(*corepb.Node) string

func (f hashFunc) ID(n *corepb.Node) string { return f(n) }

// keyedUpstream is go-control-plane's server with a snapshot per node
// key, which xdstest (one state for all) is not; it records the nodes of
// the streams it serves.
type keyedUpstream struct {
	addr  string
	cache cache.SnapshotCache

	mu    sync.Mutex
	nodes []string // "cluster/id" of each stream's first request
}

func newKeyedUpstream(t *testing.T, keyOf func(*corepb.Node) string) *keyedUpstream {
	t.Helper()
	k := &keyedUpstream{cache: cache.NewSnapshotCache(false, hashFunc(keyOf), nil)}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k.addr = lis.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	seen := map[int64]bool{}
	xs := server.NewServer(ctx, k.cache, server.CallbackFuncs{
		StreamRequestFunc: func(id int64, req *discoverypb.DiscoveryRequest) error {
			k.mu.Lock()
			defer k.mu.Unlock()
			if !seen[id] {
				seen[id] = true
				k.nodes = append(k.nodes, req.GetNode().GetCluster()+"/"+req.GetNode().GetId())
			}
			return nil
		},
	})
	gs := grpc.NewServer()
	discoverypb.RegisterAggregatedDiscoveryServiceServer(gs, xs)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); cancel(); <-done })
	return k
}

func (k *keyedUpstream) set(t *testing.T, cluster, version string, clusters ...types.Resource) {
	t.Helper()
	snap, err := cache.NewSnapshot(version, map[resource.Type][]types.Resource{resource.ClusterType: clusters})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.cache.SetSnapshot(context.Background(), cluster, snap); err != nil {
		t.Fatal(err)
	}
}

func (k *keyedUpstream) bootstrap() []byte {
	b, _ := json.Marshal(map[string]any{
		"xds_servers": []any{map[string]any{"server_uri": k.addr, "channel_creds": []any{map[string]any{"type": "insecure"}}}},
		"node":        map[string]any{"id": "relay"},
	})
	return b
}

func (k *keyedUpstream) streamNodes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Sorted(slices.Values(k.nodes))
}

// TestKeyedSeparation: clients of two keys each get their own key's
// configuration, from an upstream that varies by node, through one
// upstream stream per key presenting the key; neither ever sees the
// other's.
func TestKeyedSeparation(t *testing.T) {
	for _, tc := range []struct {
		name string
		agg  relay.Aggregation
		// upstreamKey is how the upstream tells the relay's keys apart.
		upstreamKey func(*corepb.Node) string
		blue        relaytest.BootstrapOptions
		green       relaytest.BootstrapOptions
		wantNodes   []string // cluster/id of the upstream streams
	}{
		{"cluster", relay.ByCluster(), (*corepb.Node).GetCluster,
			relaytest.BootstrapOptions{NodeID: "b1", Cluster: "blue"},
			relaytest.BootstrapOptions{NodeID: "g1", Cluster: "green"},
			[]string{"blue/relay", "green/relay"}},
		{"metadata", relay.ByMetadata("team"),
			func(n *corepb.Node) string { return n.GetMetadata().GetFields()["team"].GetStringValue() },
			relaytest.BootstrapOptions{NodeID: "b1", Metadata: map[string]any{"team": "blue"}},
			relaytest.BootstrapOptions{NodeID: "g1", Metadata: map[string]any{"team": "green"}},
			[]string{"/relay", "/relay"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newKeyedUpstream(t, tc.upstreamKey)
			up.set(t, "blue", "1", xdstest.Cluster("shared", "blue-eds"), xdstest.Cluster("blue-only", "blue-only-eds"))
			up.set(t, "green", "1", xdstest.Cluster("shared", "green-eds"), xdstest.Cluster("green-only", "green-only-eds"))
			cfg := relaytest.Config(up.bootstrap())
			cfg.Aggregation = tc.agg
			cfg.Upstream.ResourceTimeout = 200 * time.Millisecond
			r := relaytest.NewServer(t, cfg, relaytest.Options{})
			short := func(c *engine.Config) { c.ResourceTimeout = 500 * time.Millisecond }
			blue, green := client(t, r, tc.blue, short), client(t, r, tc.green, short)

			watch(t, blue, cds.TypeURL, "shared").waitFor(t, "blue's shared cluster", edsName("blue-eds"))
			watch(t, green, cds.TypeURL, "shared").waitFor(t, "green's shared cluster", edsName("green-eds"))
			watch(t, blue, cds.TypeURL, "blue-only").waitFor(t, "blue's own cluster", edsName("blue-only-eds"))
			watch(t, blue, cds.TypeURL, "green-only").waitFor(t, "green's cluster not found by blue", func(r registry.Resource, err error) bool {
				return r == nil && engine.KindOf(err) == engine.KindDoesNotExist
			})

			if got := up.streamNodes(); !slices.Equal(got, tc.wantNodes) {
				t.Errorf("upstream streams of nodes %v, want %v", got, tc.wantNodes)
			}
		})
	}
}
