package gcpmatrix

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	server "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/xdstest"
)

// Kind is the go-control-plane cache a Server serves from.
type Kind string

const (
	// SnapshotCache serves Clusters and Listeners from one snapshot.
	SnapshotCache Kind = "SnapshotCache"
	// LinearCache serves Clusters alone, the server's cache being the
	// LinearCache itself: it knows one type URL.
	LinearCache Kind = "LinearCache"
	// MuxCache routes Clusters to a LinearCache and every other type to a
	// SnapshotCache holding the Listeners: two caches of different rules
	// behind one ADS stream, as a server that keeps its endpoints or
	// clusters in LinearCaches does.
	MuxCache Kind = "MuxCache"
)

// Kinds are the caches of the matrix.
var Kinds = []Kind{SnapshotCache, LinearCache, MuxCache}

// The resources every Server serves: enough clusters that a wildcard
// answered with a subset shows, and a few listeners.
var (
	ClusterNames  = []string{"c1", "c2", "c3", "c4", "c5"}
	ListenerNames = []string{"l1", "l2", "l3"}
)

// Server is go-control-plane's xDS server (server.NewServer) on
// 127.0.0.1, over a cache of its Kind. It counts the discovery requests
// it receives and the responses it sends, both protocols together.
type Server struct {
	kind   Kind
	cache  cache.Cache
	served map[string][]string // type URL → resource names
	addr   string

	requests, responses atomic.Int64
	last                lastSeen

	mu     sync.Mutex
	grpc   *grpc.Server // nil while stopped
	cancel context.CancelFunc
	done   chan struct{} // closed when grpc's Serve returns
}

// lastSeen keeps the last request and response, for failure messages
// that show what a storm is made of.
type lastSeen struct {
	mu        sync.Mutex
	req, resp string
}

func (l *lastSeen) request(s string)  { l.mu.Lock(); l.req = s; l.mu.Unlock() }
func (l *lastSeen) response(s string) { l.mu.Lock(); l.resp = s; l.mu.Unlock() }
func (l *lastSeen) get() (req, resp string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.req, l.resp
}

// oneNode keeps one snapshot for every node: the engine and the relay's
// engine present different node IDs, and the matrix serves all the same.
type oneNode struct{}

func (oneNode) ID(*corepb.Node) string { return "all" }

// Start starts a server of kind on a free loopback port, serving
// ClusterNames (and ListenerNames, where the kind serves Listeners).
func Start(kind Kind) (*Server, error) {
	clusters := map[string]types.Resource{}
	for _, n := range ClusterNames {
		clusters[n] = xdstest.Cluster(n, n+"-eds")
	}
	listeners := map[string]types.Resource{}
	for _, n := range ListenerNames {
		listeners[n] = xdstest.Listener(n, "route-"+n)
	}
	s := &Server{kind: kind, served: map[string][]string{resource.ClusterType: ClusterNames}}
	snapshot := func(byType map[resource.Type]map[string]types.Resource) (cache.SnapshotCache, error) {
		// ads=false: with ads=true the cache withholds every response to a
		// request that does not name all the type's resources.
		sc := cache.NewSnapshotCache(false, oneNode{}, nil)
		lists := map[resource.Type][]types.Resource{}
		for typ, m := range byType {
			for _, n := range slices.Sorted(maps.Keys(m)) {
				lists[typ] = append(lists[typ], m[n])
			}
		}
		snap, err := cache.NewSnapshot("1", lists)
		if err != nil {
			return nil, err
		}
		return sc, sc.SetSnapshot(context.Background(), "all", snap)
	}
	linear := func() *cache.LinearCache {
		lc := cache.NewLinearCache(resource.ClusterType)
		lc.SetResources(clusters)
		return lc
	}
	switch kind {
	case SnapshotCache:
		sc, err := snapshot(map[resource.Type]map[string]types.Resource{resource.ClusterType: clusters, resource.ListenerType: listeners})
		if err != nil {
			return nil, err
		}
		s.cache, s.served[resource.ListenerType] = sc, ListenerNames
	case LinearCache:
		s.cache = linear()
	case MuxCache:
		sc, err := snapshot(map[resource.Type]map[string]types.Resource{resource.ListenerType: listeners})
		if err != nil {
			return nil, err
		}
		route := func(typeURL string) string {
			if typeURL == resource.ClusterType {
				return "linear"
			}
			// Not an unknown key: MuxCache ends the whole stream on one.
			return "snapshot"
		}
		s.cache = &cache.MuxCache{
			Classify:      func(r *cache.Request) string { return route(r.GetTypeUrl()) },
			ClassifyDelta: func(r *cache.DeltaRequest) string { return route(r.GetTypeUrl()) },
			Caches:        map[string]cache.Cache{"linear": linear(), "snapshot": sc},
		}
		s.served[resource.ListenerType] = ListenerNames
	default:
		return nil, fmt.Errorf("gcpmatrix: unknown cache kind %q", kind)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.addr = lis.Addr().String()
	s.serve(lis)
	return s, nil
}

// serve starts a new gRPC server and go-control-plane server on lis,
// over the same cache and counters. The server keeps go-control-plane's
// defaults, legacy wildcard included, as a deployment serving Envoy does:
// it changes nothing for a client that names resources or "*".
func (s *Server) serve(lis net.Listener) {
	ctx, cancel := context.WithCancel(context.Background())
	callbacks := server.CallbackFuncs{
		StreamRequestFunc: func(_ int64, r *discoverypb.DiscoveryRequest) error {
			s.requests.Add(1)
			s.last.request(fmt.Sprintf("%s names %q version %q nonce %q", short(r.GetTypeUrl()), r.GetResourceNames(), r.GetVersionInfo(), r.GetResponseNonce()))
			return nil
		},
		StreamResponseFunc: func(_ context.Context, _ int64, _ *discoverypb.DiscoveryRequest, r *discoverypb.DiscoveryResponse) {
			s.responses.Add(1)
			s.last.response(fmt.Sprintf("%s version %q with %d resources", short(r.GetTypeUrl()), r.GetVersionInfo(), len(r.GetResources())))
		},
		StreamDeltaRequestFunc: func(_ int64, r *discoverypb.DeltaDiscoveryRequest) error {
			s.requests.Add(1)
			s.last.request(fmt.Sprintf("%s subscribe %q unsubscribe %q nonce %q, %d initial versions", short(r.GetTypeUrl()),
				r.GetResourceNamesSubscribe(), r.GetResourceNamesUnsubscribe(), r.GetResponseNonce(), len(r.GetInitialResourceVersions())))
			return nil
		},
		StreamDeltaResponseFunc: func(_ int64, _ *discoverypb.DeltaDiscoveryRequest, r *discoverypb.DeltaDiscoveryResponse) {
			s.responses.Add(1)
			s.last.response(fmt.Sprintf("%s system version %q with %d resources, %d removed", short(r.GetTypeUrl()),
				r.GetSystemVersionInfo(), len(r.GetResources()), len(r.GetRemovedResources())))
		},
	}
	xds := server.NewServer(ctx, s.cache, callbacks)
	// WaitForHandlers: Stop returns once go-control-plane's stream loops
	// have, so that nothing of a stopped server outlives its test.
	g := grpc.NewServer(grpc.WaitForHandlers(true))
	discoverypb.RegisterAggregatedDiscoveryServiceServer(g, xds)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	s.mu.Lock()
	s.grpc, s.cancel, s.done = g, cancel, done
	s.mu.Unlock()
}

// short is a type URL's short name ("Cluster"), for messages.
func short(typeURL string) string { return registry.ResourceType{TypeURL: typeURL}.ShortName() }

// Kind returns the server's cache kind.
func (s *Server) Kind() Kind { return s.kind }

// Addr returns the server's host:port, the same across Stop and Restart.
func (s *Server) Addr() string { return s.addr }

// Cache returns the cache the server serves from, for a test that
// changes what it serves (a *cache.LinearCache for kind LinearCache).
func (s *Server) Cache() cache.Cache { return s.cache }

// Served returns the names of the resources served, by type URL.
func (s *Server) Served() map[string][]string { return s.served }

// Counts returns how many discovery requests the server has received and
// how many responses it has sent, over every stream since Start.
func (s *Server) Counts() (requests, responses int64) {
	return s.requests.Load(), s.responses.Load()
}

// Last describes the last request received and response sent.
func (s *Server) Last() (request, response string) { return s.last.get() }

// Stop closes the gRPC server, its listener and every stream: the
// server is gone, its port refuses connections. The cache stays.
func (s *Server) Stop() {
	s.mu.Lock()
	g, cancel, done := s.grpc, s.cancel, s.done
	s.grpc = nil
	s.mu.Unlock()
	if g == nil {
		return
	}
	g.Stop()
	<-done
	cancel()
}

// Restart serves again on the same address, over the same cache: a new
// gRPC server and go-control-plane server, as a restarted process with a
// persistent cache would be.
func (s *Server) Restart() error {
	s.mu.Lock()
	running := s.grpc != nil
	s.mu.Unlock()
	if running {
		return nil
	}
	lis, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("gcpmatrix: listen again on %s: %w", s.addr, err)
	}
	s.serve(lis)
	return nil
}

// Close stops the server for good.
func (s *Server) Close() { s.Stop() }
