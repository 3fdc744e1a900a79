package engine

import (
	"log/slog"
	"math"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// Config configures an Engine. The engine does not modify it; a Config may
// be reused.
type Config struct {
	// Bootstrap holds the servers (at least one), node and authorities; required.
	Bootstrap *bootstrap.Bootstrap
	// Registry holds the resource types this engine can watch. Required.
	Registry *registry.Registry
	// Features are server features of the user's own, resolved by name with
	// [features.Builtin] against "server_features"; they win a name clash.
	Features []features.ServerFeature
	// Transport reaches the servers. Nil means gRPC with the credentials
	// the bootstrap names.
	Transport transport.Builder
	// MaxResponseBytes is the largest DiscoveryResponse the engine accepts
	// (the transport applies it). Zero means
	// [transport.DefaultMaxResponseBytes], 128 MiB: gRPC's 4 MiB is too
	// small for large meshes. A larger response fails the stream, which
	// is retried with backoff; watchers get a RESOURCE_EXHAUSTED error
	// naming the size and this setting.
	MaxResponseBytes int
	// SlowWatcherThreshold is how long a watcher may hold a notification's
	// done before the engine logs a warning naming the resource and counts
	// it (xdsengine.xds_client.slow_watchers): until every done is called,
	// nothing more is read from that server (gRFC A88's flow control).
	// Zero means 30 s; negative turns the warning off.
	SlowWatcherThreshold time.Duration
	// Clock is the engine's time: it stamps updates and CSDS entries and
	// runs every wait (does-not-exist timers, the slow-watcher threshold,
	// the backoff before a stream retry), so a test clock never advanced
	// holds retries too. Nil means [RealClock].
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
	Store Store
	// StoreMaxAge is how old a kept resource may be and still be served.
	// Zero means [DefaultStoreMaxAge]; negative, no limit.
	StoreMaxAge time.Duration
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
func DefaultBackoff(n int) time.Duration {
	const (
		base       = time.Second
		max        = 120 * time.Second
		multiplier = 1.6
		jitter     = 0.2
	)
	d := min(float64(base)*math.Pow(multiplier, float64(n)), float64(max))
	d *= 1 + jitter*(rand.Float64()*2-1)
	return time.Duration(d)
}
