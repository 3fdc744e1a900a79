package xdsgrpc

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/lrs"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// Scheme is the target scheme a Builder resolves by default:
// "xdsengine:///listener" names the Listener "listener" (or what the
// bootstrap's templates make of it, gRFC A47).
const Scheme = "xdsengine"

// Options configure a Builder. The zero value reads the bootstrap from
// the environment (GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG) and
// gives each target an engine of its own.
type Options struct {
	// Source is where the channels' resources come from: an
	// *engine.Engine, an *engine.Mux, a Pool's engine, any Source. Every
	// channel shares it. The program closes it, after the Builder.
	Source engine.Source
	// Pool, when Source is nil, gives each target its engine (one per
	// target, shared by the target's channels, as gRFC A71 has it). The
	// program closes it, after the Builder.
	Pool *engine.Pool
	// Bootstrap names each target's Listener with its templates (gRFC
	// A47: client_default_listener_resource_name_template, authorities'
	// client_listener_resource_name_template). Nil, with Source or Pool
	// set: the target's path is the Listener's name. With neither set,
	// the bootstrap is read from the environment when nil, and the
	// Builder makes and owns a Pool of engines built from it.
	Bootstrap *bootstrap.Bootstrap
	// LoadReporter reports the load of clusters whose lrs_server is self
	// (gRFC A27). Nil: the Builder reports through the engine of each
	// channel, when the source is an *engine.Engine or a pool; over any
	// other Source no load is reported.
	LoadReporter *lrs.Client
	// Policies are load-balancing policies of the program's own (gRFC
	// A52). The Cluster type of the source's registry must accept them:
	// see ClusterType and Registry (a Builder that makes its own engines
	// uses Registry).
	Policies []Policy
	// Filters are HTTP filters of the program's own, run as client
	// interceptors on channels made with Builder.NewClient.
	Filters []Filter
	// Clock runs the priority failover timers; nil: the wall clock.
	Clock engine.Clock
	// FailoverTimeout is how long a priority may stay CONNECTING before
	// the next is tried; zero: DefaultFailoverTimeout (10 s).
	FailoverTimeout time.Duration
	// Scheme is the target scheme to resolve; empty: "xdsengine".
	Scheme string
	// Logger receives the few warnings the Builder logs; nil discards.
	Logger *slog.Logger
}

// Builder is a grpc-go resolver.Builder that routes a channel's RPCs by
// what an xdsengine engine accepts. Give it to grpc.NewClient with
// grpc.WithResolvers, or make channels with NewClient, which also runs
// the program's HTTP filters. The resolver selects this package's
// balancer through the service config it hands the channel, so a channel
// made with grpc.WithDisableServiceConfig cannot route by it. It is safe
// for concurrent use.
type Builder struct {
	scheme    string
	src       engine.Source
	pool      *engine.Pool
	ownPool   bool
	bootstrap *bootstrap.Bootstrap
	reporter  *lrs.Client
	custom    map[string]balancer.Builder
	filters   map[string]Filter
	clock     engine.Clock
	failover  time.Duration
	logger    *slog.Logger

	mu        sync.Mutex
	closed    bool
	reporters map[*engine.Engine]*sharedReporter
}

type sharedReporter struct {
	c    *lrs.Client
	refs int
}

// NewBuilder returns a Builder. It fails with codes.InvalidArgument on
// options that contradict each other or a bootstrap that does not parse,
// and with codes.FailedPrecondition (wrapping bootstrap.ErrNotSet) when
// it must read the bootstrap from the environment and none is set.
func NewBuilder(opts Options) (*Builder, error) {
	registerBalancer()
	b := &Builder{
		scheme: opts.Scheme, src: opts.Source, pool: opts.Pool, bootstrap: opts.Bootstrap,
		reporter: opts.LoadReporter, clock: opts.Clock, failover: opts.FailoverTimeout, logger: opts.Logger,
		reporters: map[*engine.Engine]*sharedReporter{},
	}
	if b.scheme == "" {
		b.scheme = Scheme
	}
	if b.clock == nil {
		b.clock = engine.RealClock()
	}
	if b.failover <= 0 {
		b.failover = DefaultFailoverTimeout
	}
	if b.logger == nil {
		b.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var err error
	if b.custom, err = customBuilders(opts.Policies); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if b.filters, err = filterSet(opts.Filters); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if b.src != nil && b.pool != nil {
		return nil, status.Error(codes.InvalidArgument, "xdsgrpc: Options.Source and Options.Pool are both set")
	}
	if b.src == nil && b.pool == nil {
		if b.bootstrap == nil {
			if b.bootstrap, err = bootstrap.FromEnv(); err != nil {
				code := codes.InvalidArgument
				if errors.Is(err, bootstrap.ErrNotSet) {
					code = codes.FailedPrecondition
				}
				return nil, &codedError{code: code, err: err}
			}
		}
		reg, err := Registry(opts.Policies, opts.Filters)
		if err != nil {
			return nil, &codedError{code: codes.Internal, err: err}
		}
		if b.pool, err = engine.NewPool(engine.Config{Bootstrap: b.bootstrap, Registry: reg, Logger: opts.Logger}); err != nil {
			return nil, &codedError{code: codes.InvalidArgument, err: err}
		}
		b.ownPool = true
	}
	return b, nil
}

// codedError gives an error that has none a gRPC status code, keeping it
// for errors.Is and errors.As (bootstrap.ErrNotSet).
type codedError struct {
	code codes.Code
	err  error
}

func (e *codedError) Error() string              { return "xdsgrpc: " + e.err.Error() }
func (e *codedError) Unwrap() error              { return e.err }
func (e *codedError) GRPCStatus() *status.Status { return status.New(e.code, e.Error()) }

// Registry returns the built-in resource types, with a Cluster type that
// accepts the given policies (ClusterType), and Listener and
// RouteConfiguration types that accept the given filters' configs
// without is_optional (lds.NewType, rds.NewType): the registry for an
// engine whose resources may use them. Either may be nil.
func Registry(policies []Policy, filters []Filter) (*registry.Registry, error) {
	runs := filterTypes(filters)
	types := builtin.Types()
	for i, t := range types {
		switch t.TypeURL {
		case cds.TypeURL:
			types[i] = ClusterType(policies...)
		case lds.TypeURL:
			types[i] = lds.NewType(lds.Options{HTTPFilter: runs})
		case rds.TypeURL:
			types[i] = rds.NewType(rds.Options{HTTPFilter: runs})
		}
	}
	return registry.New(types...)
}

// filterTypes reports whether one of filters has a config of message
// name typeName; nil when there are no filters.
func filterTypes(filters []Filter) func(typeName string) bool {
	if len(filters) == 0 {
		return nil
	}
	names := make(map[string]bool, len(filters))
	for _, f := range filters {
		names[registry.TypeName(f.TypeURL)] = true
	}
	return func(typeName string) bool { return names[typeName] }
}

// Scheme returns the scheme the Builder resolves.
func (b *Builder) Scheme() string { return b.scheme }

// Build is called by grpc-go for each channel to a target of the
// Builder's scheme.
func (b *Builder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	return b.build(target, cc, opts, nil)
}

// NewClient makes a channel to target (such as "xdsengine:///service")
// that resolves with b and runs the program's filters (Options.Filters)
// as interceptors; opts follow grpc.NewClient's.
func (b *Builder) NewClient(target string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	bd := newBinding()
	own := []grpc.DialOption{grpc.WithResolvers(&boundBuilder{b: b, bd: bd})}
	if len(b.filters) > 0 {
		own = append(own, grpc.WithChainUnaryInterceptor(bd.unary), grpc.WithChainStreamInterceptor(bd.stream))
	}
	return grpc.NewClient(target, append(own, opts...)...)
}

// boundBuilder builds the resolver of one channel made by NewClient,
// tied to that channel's interceptors.
type boundBuilder struct {
	b  *Builder
	bd *binding
}

func (bb *boundBuilder) Scheme() string { return bb.b.scheme }

func (bb *boundBuilder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	r, err := bb.b.build(target, cc, opts, bb.bd)
	if err != nil {
		bb.bd.resolved() // the interceptors wait no longer: the RPC fails
	}
	return r, err
}

// acquire returns the source of a target's channel, its load reporter,
// and what releases them.
func (b *Builder) acquire(target string) (engine.Source, *lrs.Client, func(), error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, nil, nil, status.Error(codes.Unavailable, "xdsgrpc: the Builder is closed")
	}
	src := b.src
	var e *engine.Engine
	releaseEngine := func() {}
	if src == nil {
		got, release, err := b.pool.Get(target)
		if err != nil {
			return nil, nil, nil, err
		}
		src, e, releaseEngine = got, got, release
	} else {
		e, _ = src.(*engine.Engine)
	}
	if b.reporter != nil || e == nil {
		return src, b.reporter, releaseEngine, nil
	}
	b.mu.Lock()
	sr := b.reporters[e]
	if sr == nil {
		sr = &sharedReporter{c: lrs.NewClient(e)}
		b.reporters[e] = sr
	}
	sr.refs++
	b.mu.Unlock()
	var once sync.Once
	return src, sr.c, func() {
		once.Do(func() {
			// The reporter goes before its engine: lrs.Client reports
			// through the engine's connections.
			b.mu.Lock()
			sr.refs--
			last := sr.refs == 0
			if last {
				delete(b.reporters, e)
			}
			b.mu.Unlock()
			if last {
				sr.c.Close()
			}
			releaseEngine()
		})
	}, nil
}

// Close closes what the Builder made: the pool of engines it made from
// the bootstrap, and the load reporters of channels still open. Close
// channels first; a channel made after Close fails to resolve.
func (b *Builder) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	reporters := b.reporters
	b.reporters = map[*engine.Engine]*sharedReporter{}
	b.mu.Unlock()
	for _, sr := range reporters {
		sr.c.Close()
	}
	if b.ownPool {
		return b.pool.Close()
	}
	return nil
}

var _ resolver.Builder = (*Builder)(nil)
