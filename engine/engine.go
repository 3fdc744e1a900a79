package engine

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/alloc"
	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/engine/internal/node"
	"github.com/xdsengine/xdsengine/engine/internal/oplock"
	"github.com/xdsengine/xdsengine/engine/internal/resolve"
	"github.com/xdsengine/xdsengine/engine/internal/setup"
	"github.com/xdsengine/xdsengine/engine/internal/transports"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/buildinfo"
	"github.com/xdsengine/xdsengine/internal/serial"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// Version is the module's version as Go's build information records it
// (a tag such as "v0.2.0", a pseudo-version, or "(devel)" when none): the
// node's user agent version by default.
var Version = buildinfo.ModuleVersion()

// DefaultSlowWatcherThreshold is Config.SlowWatcherThreshold's default.
const DefaultSlowWatcherThreshold = 30 * time.Second

// Engine is an xDS client: it keeps one ADS stream per xDS server it
// needs, caches what the servers send and tells watchers (gRFC A27, A57,
// A71, A88, A95). It is safe for concurrent use.
type Engine struct {
	cfg        Config
	reg        *registry.Registry
	types      setup.TypeSet // those on under the switches; entries share them
	clock      Clock
	log        *slog.Logger
	switches   features.Switches
	backoff    func(int) time.Duration
	node       *corepb.Node
	nodeID     string
	known      []features.ServerFeature
	fallback   FallbackPolicy
	ser        *serial.Serializer
	streamsRun sync.WaitGroup
	metrics    *metrics.Recorder
	// The Config's, with their defaults:
	maxResponseBytes     int
	slowWatcherThreshold time.Duration
	certificateProviders func(name string) bool // the bootstrap's instances; nil: unchecked
	closed               atomic.Bool

	// mu guards everything below, and the authorities' and channels'
	// state, for short critical sections: one part of a response, a
	// subscription handed to a stream. Watch and cancel calls are handed
	// to it (mu.Do): they never wait for a response to be applied.
	mu         oplock.Mutex[op]
	auths      resolve.Authorities[*authority] // fixed in New
	channels   map[string]*channel             // by transports.Key
	transports *transports.Set
	// shapeGen counts changes to which entries exist and which server each
	// authority uses (channel.applyingShape); activeGen, to the latter: while
	// it stays, entries a response did not mark are at the back of their order.
	shapeGen, activeGen uint64
	coverMarks          uint64                           // numbers the responses applied, for entry.coveredBy
	notices             alloc.Chunks[*wire.Gate, notice] // of the response being applied
	origins             alloc.Shared[origin]
	lastGood            *lastGood
}

// New builds an engine. It connects to no server until the first Watch.
func New(cfg Config) (*Engine, error) {
	if err := setup.Check(cfg.Registry, cfg.Bootstrap, cfg.MaxResponseBytes); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, reg: cfg.Registry, nodeID: cfg.Bootstrap.Node.ID,
		auths: resolve.Authorities[*authority]{ByName: make(map[string]*authority)}, channels: make(map[string]*channel)}
	e.mu.Run = e.applyOpLocked
	e.applyDefaults()
	e.transports = transports.New(e.cfg.Transport, transport.Options{MaxResponseBytes: e.maxResponseBytes}, e.log, &e.streamsRun)
	types, clientFeatures := setup.Types(cfg.Registry, e.switches)
	e.types = types
	if err := transport.CheckServers(e.cfg.Transport, cfg.Bootstrap); err != nil {
		return nil, err
	}
	e.known = setup.Known(e.switches, cfg.Features)
	e.node = node.Build(cfg.Bootstrap.Node, cmp.Or(cfg.UserAgentName, "xdsengine"), cmp.Or(cfg.UserAgentVersion, Version), clientFeatures)
	oldStyle, byName := setup.Authorities(cfg.Bootstrap, e.switches)
	e.auths.OldStyle = newAuthority(oldStyle)
	e.auths.OldStyle.oldStyle = true
	for name, a := range byName {
		e.auths.ByName[name] = newAuthority(a)
	}
	m, err := metrics.New(cfg.MeterProvider, cfg.Target, Version, e.gauges)
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	e.metrics = m
	e.ser = serial.New()
	if cfg.Store != nil {
		e.startStore()
	}
	return e, nil
}

func (e *Engine) applyDefaults() {
	cfg := e.cfg
	// Interfaces are compared with nil, not with cmp.Or: a Clock or
	// FallbackPolicy of a func type would make == panic.
	e.clock = cfg.Clock
	if e.clock == nil {
		e.clock = realClock{}
	}
	e.log = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	e.certificateProviders = setup.CertificateProviders(cfg.Bootstrap, cfg.IgnoreCertificateProviders)
	e.maxResponseBytes = cmp.Or(cfg.MaxResponseBytes, transport.DefaultMaxResponseBytes)
	e.slowWatcherThreshold = max(cmp.Or(cfg.SlowWatcherThreshold, DefaultSlowWatcherThreshold), 0)
	e.backoff = cfg.Backoff
	if e.backoff == nil {
		e.backoff = DefaultBackoff
	}
	e.switches = setup.Switches(cfg.Switches)
	e.fallback = cfg.FallbackPolicy
	if e.fallback == nil {
		e.fallback = DefaultFallbackPolicy()
	}
	if cfg.Transport == nil {
		e.cfg.Transport = transport.GRPC()
	}
}

// NodeID returns the node ID from the bootstrap.
func (e *Engine) NodeID() string { return e.nodeID }

// Registry returns the engine's resource types.
func (e *Engine) Registry() *registry.Registry { return e.reg }

// Close stops every stream and the callback goroutine: no callback starts
// after Close returns, and no goroutine of the engine is left, whatever
// it was doing. Called from a watcher callback (or a Pool's release
// there), it returns without waiting for that callback, whose goroutine
// ends as soon as it returns.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed.Swap(true) {
		e.mu.Unlock()
		return nil
	}
	// Every transport closes here, those still lent to other services
	// (load reporting) too: their users are to be done by now.
	closeTransports := e.transports.Drain()
	for _, c := range e.channels {
		c.shutdownLocked()
	}
	e.channels = nil
	e.mu.Unlock()
	errs := []error{closeTransports()}
	e.streamsRun.Wait()
	if lg := e.lastGood; lg != nil {
		lg.writer.Close()
		errs = append(errs, lg.store.Close())
	}
	e.ser.Close()
	e.metrics.Close()
	return errors.Join(errs...)
}

// For other xDS services on the same servers: package lrs reports load
// over the engine's connections, node, clock and backoff, configuring none.

// Node returns the node the engine sends in each stream's first request
// (id, cluster, locality, metadata, user agent, client features), as a
// copy the caller may modify.
func (e *Engine) Node() *corepb.Node { return proto.Clone(e.node).(*corepb.Node) }

// Transport returns the engine's transport to server, shared: one
// connection per server entry for every xDS service, as gRPC keeps.
// release gives it back; it closes with its last user, and with the
// engine. After Close, Transport fails with codes.Unavailable.
func (e *Engine) Transport(server bootstrap.ServerConfig) (t transport.Transport, release func(), err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return nil, nil, status.Error(codes.Unavailable, "engine: closed")
	}
	return e.transports.Lend(server, &e.mu)
}

// Clock returns the engine's clock (Config.Clock, or the wall clock).
func (e *Engine) Clock() Clock { return e.clock }

// Logger returns the engine's logger (Config.Logger, or a discarding one).
func (e *Engine) Logger() *slog.Logger { return e.log }

// Backoff returns how long the engine waits before its n-th retry of a
// failed stream (Config.Backoff, or [DefaultBackoff]).
func (e *Engine) Backoff(n int) time.Duration { return e.backoff(n) }
