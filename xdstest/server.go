package xdstest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	server "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Options configures [Start]. The zero value is ready to use.
type Options struct {
	// Name identifies the server in logs and panics, e.g. "primary" and
	// "fallback" in a fallback test. Default "mgmt".
	Name string
	// Port is the loopback port to listen on; 0 picks a free one. Set it
	// to the port of a server that was closed to bring up a fresh server
	// (empty state, new stream IDs) at the same address.
	Port int
	// Register, when set, registers more gRPC services on the server
	// before it starts serving, such as a load reporting (LRS) service
	// for a test of a client that reports load to "self".
	Register func(*grpc.Server)
	// Logf, when set, receives a line when the server starts, stops and
	// restarts (tests pass t.Logf).
	Logf func(format string, args ...any)
	// CountOnly makes the server count requests and responses instead of
	// keeping them, so that its memory does not grow with the length of
	// a long-running test (a soak). [Server.Counts] and the stream counts
	// work as always; Requests, StreamRequests, NACKs and Responses
	// return nothing, and WaitForRequest matches nothing.
	CountOnly bool
}

// Server is a go-control-plane ADS management server on 127.0.0.1.
//
// All methods are safe for concurrent use.
type Server struct {
	logf  func(format string, args ...any)
	name  string
	addr  string
	lis   *gatedListener
	grpc  *grpc.Server
	cache cache.SnapshotCache
	park  *parkingCache

	cancel    context.CancelFunc // ends go-control-plane's stream loops
	serveDone chan struct{}      // closed when grpc.Server.Serve returns
	closeOnce sync.Once

	// setMu orders Set and Update so that versions reach the cache in the
	// order they were assigned.
	setMu   sync.Mutex
	version int
	snap    *snapshot // nil before the first Set or Update
	// resourceErrors are the xRFC TP3 errors served instead of resources,
	// by type URL and name (SetResourceErrors); publish puts them in
	// every snapshot. Guarded by setMu.
	resourceErrors map[string]map[string]*rpcstatus.Status

	obs observations
}

// allNodes makes the SnapshotCache keep a single snapshot for every client:
// tests set "the" state of the world, whatever node ID a client sends.
type allNodes struct{}

// ID returns the same key for every node.
func (allNodes) ID(*corepb.Node) string { return "*" }

// Start starts a server on 127.0.0.1; Close stops it. It serves no
// resources until the first [Server.Set] or [Server.Update]: until then
// every subscription stays unanswered, which is the "reachable but silent"
// server.
func Start(opts Options) (*Server, error) {
	name := opts.Name
	if name == "" {
		name = "mgmt"
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(opts.Port)))
	if err != nil {
		return nil, fmt.Errorf("control plane %s: listen: %w", name, err)
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	s := &Server{
		logf:      logf,
		name:      name,
		addr:      l.Addr().String(),
		lis:       newGatedListener(l),
		serveDone: make(chan struct{}),
	}
	s.obs.init()
	s.obs.countOnly = opts.CountOnly

	// ads=false: with ads=true the SnapshotCache withholds a response
	// unless the request names every resource of the type, and gRPC
	// clients subscribe to subsets. The NodeHash keeps one snapshot for
	// all clients.
	s.cache = cache.NewSnapshotCache(false, allNodes{}, nil)
	s.park = newParkingCache(s.cache)

	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	callbacks := server.CallbackFuncs{
		StreamOpenFunc: func(context.Context, int64, string) error {
			s.obs.streamOpened()
			return nil
		},
		StreamClosedFunc: func(id int64, _ *corepb.Node) {
			s.park.onStreamClosed(id)
			s.obs.streamClosed()
		},
		// Incremental streams count as streams too; their requests are
		// not recorded (Requests and WaitForRequest see SotW ones).
		DeltaStreamOpenFunc: func(context.Context, int64, string) error {
			s.obs.streamOpened()
			return nil
		},
		DeltaStreamClosedFunc: func(int64, *corepb.Node) { s.obs.streamClosed() },
		StreamRequestFunc: func(id int64, req *discoverypb.DiscoveryRequest) error {
			s.park.onRequest(id, req)
			return nil
		},
		StreamResponseFunc: func(_ context.Context, id int64, _ *discoverypb.DiscoveryRequest, resp *discoverypb.DiscoveryResponse) {
			// The server sends this very message after the callback
			// returns (sotw/v3/server.go send), so unwrapHarness edits
			// the wire response. Should that ever change, clients would
			// see the TTL, not lose the wrapper, and tests of resource
			// errors would fail, not pass.
			unwrapHarness(resp)
			s.park.onResponse(id, resp)
			s.obs.recordResponse(resp)
		},
	}
	// DeactivateLegacyWildcard: gRPC clients never mean "everything" by an
	// empty resource_names list; with legacy wildcard active, an empty
	// first request would subscribe to all LDS/CDS resources.
	xds := server.NewServer(ctx, s.park, callbacks, sotw.DeactivateLegacyWildcard())

	s.grpc = grpc.NewServer(
		grpc.StreamInterceptor(s.obs.intercept),
		// Stop waits for the stream handlers to return, so Close leaves
		// no go-control-plane stream loop behind.
		grpc.WaitForHandlers(true),
	)
	discoverypb.RegisterAggregatedDiscoveryServiceServer(s.grpc, xds)
	if opts.Register != nil {
		opts.Register(s.grpc)
	}
	go func() {
		defer close(s.serveDone)
		// Serve returns only when Close stops the grpc.Server.
		_ = s.grpc.Serve(s.lis)
	}()
	s.logf("control plane %s: serving ADS on %s", name, s.addr)
	return s, nil
}

// Addr returns the server's host:port. It stays the same across
// [Server.Stop] and [Server.Restart].
func (s *Server) Addr() string { return s.addr }

// Version returns the version of the last [Server.Set] or [Server.Update]
// ("1", "2", ...), or "" before the first.
func (s *Server) Version() string {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if s.version == 0 {
		return ""
	}
	return strconv.Itoa(s.version)
}

// Set replaces the whole state of the world, for every type URL, with
// resources and bumps the version once. Every type gets the new version,
// including types that have no resources any more, so every open
// subscription gets a response: a full-state type (LDS, CDS) whose
// resource is gone gets a response without it, which the client reads as a
// deletion; any other type gets a response listing only the subscribed
// resources that still exist. Set also releases NACK-parked subscriptions.
//
// Set panics on a resource without Name or Message, or on two resources with
// the same type URL and name.
func (s *Server) Set(resources ...Resource) {
	byType := groupByType(s.name, "", resources)
	s.setMu.Lock()
	defer s.setMu.Unlock()
	s.version++
	v := strconv.Itoa(s.version)
	snap := &snapshot{base: v, types: make(map[string]*typeState, len(byType))}
	for tu, rs := range byType {
		snap.types[tu] = &typeState{version: v, resources: rs}
	}
	s.publish(snap)
}

// Update replaces the resources of typeURL only and bumps the version; the
// other types keep their resources and their versions, so their
// subscriptions get no response. Resources without TypeURL are served
// under typeURL whatever their message type (handy for custom types).
// Update with no resources deletes all resources of the type.
//
// Before the first [Server.Set], types that no Update has named get no
// response at all. Update panics like Set, and on a resource whose TypeURL
// is set and differs from typeURL.
func (s *Server) Update(typeURL string, resources ...Resource) {
	if typeURL == "" {
		panic(fmt.Sprintf("xdstest %s: Update with empty type URL", s.name))
	}
	rs := groupByType(s.name, typeURL, resources)[typeURL]
	s.setMu.Lock()
	defer s.setMu.Unlock()
	s.version++
	v := strconv.Itoa(s.version)
	snap := &snapshot{}
	if s.snap != nil {
		snap.base = s.snap.base
		snap.types = maps.Clone(s.snap.types)
	}
	if snap.types == nil {
		snap.types = make(map[string]*typeState)
	}
	snap.types[typeURL] = &typeState{version: v, resources: rs}
	s.publish(snap)
}

// publish installs snap; s.setMu must be held. The cache gets snap with
// the resources that SetResourceErrors names replaced by placeholders for
// their errors, which the response callback turns into resource_errors
// (see errorTTL).
func (s *Server) publish(snap *snapshot) {
	s.snap = snap
	served := snap
	if len(s.resourceErrors) > 0 {
		served = &snapshot{base: snap.base, types: maps.Clone(snap.types)}
		if served.types == nil {
			served.types = make(map[string]*typeState)
		}
		for typeURL, errs := range s.resourceErrors {
			ts := &typeState{version: snap.GetVersion(typeURL), resources: make(map[string]types.ResourceWithTTL)}
			if old := snap.types[typeURL]; old != nil {
				maps.Copy(ts.resources, old.resources)
			}
			for name, st := range errs {
				ttl := errorTTL
				ts.resources[name] = types.ResourceWithTTL{Resource: named{Message: st, name: name}, TTL: &ttl}
			}
			served.types[typeURL] = ts
		}
	}
	// SetSnapshot only fails if its context ends while a watch channel is
	// full, which cannot happen: each watch is answered at most once and
	// has a buffer of one.
	if err := s.cache.SetSnapshot(context.Background(), allNodes{}.ID(nil), served); err != nil {
		panic(fmt.Sprintf("xdstest %s: SetSnapshot: %v", s.name, err))
	}
}

// SetResourceErrors makes the server answer for the named resources of
// typeURL with xRFC TP3 errors (DiscoveryResponse.resource_errors, which
// go-control-plane does not support) instead of the resources: from now
// on every response of the type that would carry one of those resources
// (it is subscribed, and new to the stream or of a new version) carries
// its error in resource_errors instead, whether or not the resource
// exists. errs replaces the type's previous errors; an empty map serves
// the resources again. The type's version is bumped, so every
// subscription gets a response now, as after an Update.
//
// The errors go through go-control-plane's cache like resources, so each
// response is consistent: a resource and an error for it never meet in
// one response, and a full-state type (LDS, CDS) never seems to delete a
// resource that has an error instead. SetResourceErrors panics on an OK
// status: TP3 errors are errors.
func (s *Server) SetResourceErrors(typeURL string, errs map[string]*rpcstatus.Status) {
	if typeURL == "" {
		panic(fmt.Sprintf("xdstest %s: SetResourceErrors with empty type URL", s.name))
	}
	clone := make(map[string]*rpcstatus.Status, len(errs))
	for name, st := range errs {
		if st.GetCode() == 0 {
			panic(fmt.Sprintf("xdstest %s: SetResourceErrors: %q has an OK status; TP3 errors are errors", s.name, name))
		}
		clone[name] = proto.Clone(st).(*rpcstatus.Status)
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if s.resourceErrors == nil {
		s.resourceErrors = make(map[string]map[string]*rpcstatus.Status)
	}
	if len(clone) == 0 {
		delete(s.resourceErrors, typeURL)
	} else {
		s.resourceErrors[typeURL] = clone
	}
	s.version++
	v := strconv.Itoa(s.version)
	snap := &snapshot{}
	if s.snap != nil {
		snap.base = s.snap.base
		snap.types = maps.Clone(s.snap.types)
	}
	if snap.types == nil {
		snap.types = make(map[string]*typeState)
	}
	ts := &typeState{version: v}
	if old := snap.types[typeURL]; old != nil {
		ts.resources = old.resources
	}
	snap.types[typeURL] = ts
	s.publish(snap)
}

// stopTimeout bounds how long Stop waits for the server side of the
// streams to end; it only matters if something is badly wrong.
const stopTimeout = 10 * time.Second

// Stop takes the server down without giving up its port: open ADS streams
// fail on the client with codes.Unavailable, and new connections are
// accepted and closed at once, so new streams fail with codes.Unavailable
// too. Resources are kept. Stop returns once the server has seen every
// stream close ([Server.OpenStreams] is 0). Stop on a stopped server does
// nothing more.
func (s *Server) Stop() {
	s.lis.stop()
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := s.WaitForOpenStreams(ctx, 0); err != nil {
		// A stream that outlives the cut is a bug in the listener gate;
		// say so loudly, the server is still stopped for new streams.
		s.logf("control plane %s: Stop: streams still open: %v", s.name, err)
	}
	s.logf("control plane %s: stopped", s.name)
}

// CutConnections closes every client connection at once, as a network
// failure would, while the server keeps running: clients see their
// streams fail with codes.Unavailable and reconnect on their own backoff.
// It returns the number of connections cut.
func (s *Server) CutConnections() int {
	n := s.lis.cut()
	s.logf("control plane %s: cut %d connections", s.name, n)
	return n
}

// Restart serves again on the same address with the resources as they are
// now (including Set and Update calls made while stopped). Clients
// reconnect on their own backoff schedule; their new streams get the
// current state. Restart on a running or closed server does nothing.
func (s *Server) Restart() {
	s.lis.restart()
	s.logf("control plane %s: restarted", s.name)
}

// Close shuts the server down for good and releases the port. Open streams
// fail with codes.Unavailable. Close returns when every goroutine of the
// server has ended; it may be
// called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		// Close the connections first, so clients see Unavailable (as
		// with Stop) rather than the OK status go-control-plane returns
		// when its context ends.
		s.lis.stop()
		s.grpc.Stop()
		s.cancel()
		<-s.serveDone
	})
}

// wrapperTypeURL is the type URL of envoy.service.discovery.v3.Resource.
var wrapperTypeURL = typeURLOf(&discoverypb.Resource{})

// unwrapHarness undoes, in a response about to be sent, what the harness
// did to get go-control-plane to carry what it does not support: it
// removes the TTL that every wrapped resource got only to be wrapped (see
// wrapTTL), without which a TTL-aware client would be told to expire the
// resource, and it turns the placeholders of SetResourceErrors (see
// errorTTL) into resource_errors.
func unwrapHarness(resp *discoverypb.DiscoveryResponse) {
	kept := resp.Resources[:0]
	for _, a := range resp.GetResources() {
		if a.GetTypeUrl() != wrapperTypeURL {
			kept = append(kept, a)
			continue
		}
		var w discoverypb.Resource
		if err := proto.Unmarshal(a.GetValue(), &w); err != nil || w.GetTtl() == nil {
			kept = append(kept, a)
			continue
		}
		if w.GetTtl().AsDuration() == errorTTL {
			st := &rpcstatus.Status{}
			if err := proto.Unmarshal(w.GetResource().GetValue(), st); err == nil {
				resp.ResourceErrors = append(resp.ResourceErrors, &discoverypb.ResourceError{
					ResourceName: &discoverypb.ResourceName{Name: w.GetName()},
					ErrorDetail:  st,
				})
				continue
			}
		}
		w.Ttl = nil
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&w)
		if err != nil {
			kept = append(kept, a)
			continue
		}
		// The Any belongs to this response alone: the SnapshotCache builds
		// a new response for every watch it answers.
		a.Value = b
		kept = append(kept, a)
	}
	// Zero the tail, so the dropped Anys are not kept alive.
	clear(resp.Resources[len(kept):])
	resp.Resources = kept
	// Resources come from a map: sorted, the errors read the same in
	// every response.
	slices.SortFunc(resp.ResourceErrors, func(x, y *discoverypb.ResourceError) int {
		return strings.Compare(x.GetResourceName().GetName(), y.GetResourceName().GetName())
	})
}
