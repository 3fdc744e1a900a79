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
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/sharedtransport"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/engine/storage"
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

// DefaultQuietWindow is Config.QuietWindow's default: a server that ends
// the streams it refuses does so well within it, and it keeps a reconnect
// after an outage, backoff aside, within a second or so of healthy.
const DefaultQuietWindow = time.Second

// Engine is an xDS client: it keeps one ADS stream per xDS server it
// needs, caches what the servers send and tells watchers (gRFC A27, A57,
// A71, A88, A95). It is safe for concurrent use.
type Engine struct {
	cfg        Config
	reg        *registry.Registry
	types      typeSet // those on under the switches; entries share them
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
	metrics    *metricsRecorder
	// The Config's, with their defaults:
	maxResponseBytes     int
	slowWatcherThreshold time.Duration
	quietWindow          time.Duration
	storeWait            time.Duration
	certificateProviders func(name string) bool // the bootstrap's instances; nil: unchecked
	closed               atomic.Bool

	// mu guards everything below, and the authorities' and channels'
	// state, for short critical sections: one part of a response, a
	// subscription handed to a stream. Watch and cancel calls are handed
	// to it (mu.Do): they never wait for a response to be applied.
	mu            opLock
	auths         authorities         // fixed in New
	channels      map[string]*channel // by sharedtransport.Key
	transports    *sharedtransport.Set
	responseMarks uint64 // numbers the responses applied, for entry.coveredBy
	// servedGen counts the changes of which entries each channel serves:
	// entries made or removed, authorities moving between servers (see
	// applyDeletionsLocked).
	servedGen uint64
	// gate is the gate of the response a part of which is being applied
	// (streamHost.Apply), nil at any other time: the notices made meanwhile
	// hold it (scheduleLocked). noticeChunk and lastOrigin save the
	// response path allocations (newNoticeLocked, sharedOrigin).
	gate        *wire.Gate
	noticeChunk noticeChunk
	lastOrigin  *origin
	storeSide   *storeSide
}

// Config configures an Engine, which does not modify it: a Config may be
// reused.
type Config struct {
	// Bootstrap holds the servers (at least one), node and authorities; required.
	Bootstrap *bootstrap.Bootstrap
	// Registry holds the resource types this engine can watch. Required.
	Registry *registry.Registry
	// Features are server features of the user's own, resolved by name with
	// [features.Builtin] against "server_features"; they win a name clash.
	Features []features.ServerFeature
	// Transport reaches the servers. Nil: gRPC, with the bootstrap's credentials.
	Transport transport.Builder
	// MaxResponseBytes is the largest DiscoveryResponse the engine (through
	// the transport) accepts. Zero means [transport.DefaultMaxResponseBytes],
	// 128 MiB: gRPC's 4 MiB is too small for large meshes. A larger response
	// fails the stream, retried with backoff; watchers get a
	// RESOURCE_EXHAUSTED error naming the size and this setting.
	MaxResponseBytes int
	// SlowWatcherThreshold is how long a watcher may hold a notification's
	// done before the engine logs a warning naming the resource and counts
	// it (xdsengine.xds_client.slow_watchers): until every done is called,
	// nothing more is read from that server (gRFC A88's flow control).
	// Zero means 30 s; negative turns the warning off.
	SlowWatcherThreshold time.Duration
	// Clock is the engine's time: it stamps updates and CSDS entries and
	// runs every wait (does-not-exist timers, the slow-watcher threshold,
	// stream retries' backoff), so a test clock never advanced holds
	// retries too. Nil means [RealClock].
	Clock Clock
	// ResourceTimeout overrides the does-not-exist timer's length. Zero
	// means 15 s, or what the server's features say (30 s with
	// resource_timer_is_transient_error).
	ResourceTimeout time.Duration
	// Backoff is the wait, on Clock, before the n-th (from 0) consecutive
	// retry of a stream that failed without a response; nil: [DefaultBackoff].
	Backoff func(n int) time.Duration
	// Logger receives the engine's logs. Nil discards them.
	Logger *slog.Logger
	// MeterProvider receives the engine's gRFC A78 metrics
	// (grpc.xds_client.*). Nil records nothing.
	MeterProvider metric.MeterProvider
	// FallbackPolicy decides when an authority falls back to its next
	// server (gRFC A71). Nil means [DefaultFallbackPolicy].
	FallbackPolicy FallbackPolicy
	// Switches pins gRPC's environment switches; nil reads them with
	// [features.SwitchesFromEnv] in New. They reach the resource types too
	// (DecodeOptions.Switches, ResourceType.Enabled): one place decides.
	Switches *features.Switches
	// Target is the data plane target this engine serves: the CSDS
	// client_scope and the grpc.target metric label. May be empty.
	Target string
	// UserAgentName and UserAgentVersion go into the node. Empty means
	// "xdsengine" and the module version.
	UserAgentName, UserAgentVersion string
	// Store, when set, keeps what the engine accepts, and serves it when
	// no server of an authority answers: a process restarted during an
	// outage starts from its last good configuration (see [Store]).
	// Nil keeps nothing. The engine closes it.
	Store storage.Store
	// StoreMaxAge is how old a kept resource may be and still be served;
	// the store forgets what is older when it is next loaded. Zero means
	// [DefaultStoreMaxAge]; negative, no limit.
	StoreMaxAge time.Duration
	// StoreWait is how long the engine waits for a server of an
	// authority to answer before it serves the authority's watches from
	// Config.Store: a refused connection serves it at once, and a server
	// whose address drops every packet, or that accepts connections but
	// never answers, after StoreWait. A server that answers later wins,
	// as one that returns after an outage does. Zero means
	// [DefaultStoreWait].
	StoreWait time.Duration
	// QuietWindow is how long a stream's request that subscribes to names
	// may go unanswered, the stream staying open, before the server's
	// silence counts as an answer: it has nothing new to send. A server
	// that has answered before is then healthy again (Connected, the
	// grpc.xds_client.connected gauge, and the end of the ambient
	// UNAVAILABLE errors its outage caused), and the wildcards (WatchAll)
	// of those types are answered. Incremental servers say nothing on a
	// new stream whose initial_resource_versions are current, and some
	// servers say nothing to a subscription that adds nothing new. A
	// server that has never answered is healthy only once it answers.
	// Zero means [DefaultQuietWindow]; negative, never (only responses
	// count).
	QuietWindow time.Duration
	// IgnoreCertificateProviders stops the check, which gRPC always
	// makes, that each certificate provider instance a Cluster or
	// Listener names is in the bootstrap's certificate_providers (gRFC
	// A29). For a program that does its own TLS, whose bootstrap defines
	// no providers.
	IgnoreCertificateProviders bool
}

// Clock is the engine's source of time; tests inject a fake one so that
// 15 s timers take microseconds.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed. stop
	// prevents the call if it has not started and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// RealClock returns the wall clock.
func RealClock() Clock { return realClock{} }

// DefaultBackoff is gRPC's connection backoff (doc/connection-backoff.md),
// the default of Config.Backoff: 1 s before the first retry, growing ×1.6
// to at most 120 s, with ±20 % jitter so that clients that lost the same
// server do not return in lockstep.
func DefaultBackoff(n int) time.Duration { return defaultBackoff(n) }

// New builds an engine. It connects to no server until the first Watch.
func New(cfg Config) (*Engine, error) {
	if err := checkConfig(cfg.Registry, cfg.Bootstrap, cfg.MaxResponseBytes); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, reg: cfg.Registry, nodeID: cfg.Bootstrap.Node.ID,
		auths: authorities{byName: make(map[string]*authority)}, channels: make(map[string]*channel)}
	e.mu.run = e.applyOpLocked
	e.applyDefaults()
	e.transports = sharedtransport.New(e.cfg.Transport, transport.Options{MaxResponseBytes: e.maxResponseBytes}, e.log, &e.streamsRun)
	types, clientFeatures := enabledTypes(cfg.Registry, e.switches)
	e.types = types
	if err := transport.CheckServers(e.cfg.Transport, cfg.Bootstrap); err != nil {
		return nil, err
	}
	e.known = knownFeatures(e.switches, cfg.Features)
	e.node = buildNode(cfg.Bootstrap.Node, cmp.Or(cfg.UserAgentName, "xdsengine"), cmp.Or(cfg.UserAgentVersion, Version), clientFeatures)
	oldStyle := authoritiesOf(cfg.Bootstrap, e.switches, func(a authoritySetup) { e.auths.byName[a.Name] = newAuthority(a) })
	e.auths.oldStyle = newAuthority(oldStyle)
	e.auths.oldStyle.oldStyle = true
	m, err := newMetrics(cfg.MeterProvider, cfg.Target, Version, e.gauges)
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
	e.certificateProviders = certificateProvidersOf(cfg.Bootstrap, cfg.IgnoreCertificateProviders)
	e.maxResponseBytes = cmp.Or(cfg.MaxResponseBytes, transport.DefaultMaxResponseBytes)
	e.slowWatcherThreshold = max(cmp.Or(cfg.SlowWatcherThreshold, DefaultSlowWatcherThreshold), 0)
	e.quietWindow = max(cmp.Or(cfg.QuietWindow, DefaultQuietWindow), 0)
	e.storeWait = max(cmp.Or(cfg.StoreWait, DefaultStoreWait), 0)
	e.backoff = cfg.Backoff
	if e.backoff == nil {
		e.backoff = DefaultBackoff
	}
	e.switches = switchesOf(cfg.Switches)
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
	for _, a := range e.allAuthoritiesLocked() {
		if a.stopStoreWait != nil {
			a.stopStoreWait()
			a.stopStoreWait = nil
		}
	}
	e.channels = nil
	e.mu.Unlock()
	errs := []error{closeTransports()}
	e.streamsRun.Wait()
	if lg := e.storeSide; lg != nil {
		lg.writer.Close()
		errs = append(errs, lg.store.Close())
	}
	e.ser.Close()
	e.metrics.close()
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
