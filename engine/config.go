package engine

import (
	"log/slog"
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
	// Bootstrap holds the servers, node and authorities. Required: at
	// least one server.
	Bootstrap *bootstrap.Bootstrap
	// Registry holds the resource types this engine can watch. Required.
	Registry *registry.Registry
	// Features are server features of the user's own, resolved by name
	// against the bootstrap's "server_features" together with
	// [features.Builtin]; on a name clash these win.
	Features []features.ServerFeature
	// Transport reaches the servers. Nil means gRPC with the credentials
	// the bootstrap names.
	Transport transport.Builder
	// MaxResponseBytes is the largest DiscoveryResponse the engine accepts
	// from a server; the default transport applies it to its streams.
	// Zero means [transport.DefaultMaxResponseBytes] (128 MiB; gRPC's own default
	// of 4 MiB is too small for large meshes). A larger response cannot
	// be read: the stream fails, watchers get a RESOURCE_EXHAUSTED error
	// naming the size and this setting, and the stream is retried with
	// backoff.
	MaxResponseBytes int
	// SlowWatcherThreshold is how long a watcher may hold a notification's
	// done before the engine logs a warning naming the resource and
	// counts it (xdsengine.xds_client.slow_watchers): until every done
	// is called, nothing more is read from that server (gRFC A88's flow
	// control). Zero means 30 s; negative turns the warning off.
	SlowWatcherThreshold time.Duration
	// Clock is the engine's time: it stamps updates and CSDS entries and
	// runs every wait: does-not-exist timers, the slow-watcher threshold,
	// and the wait before each stream retry (whose length Backoff
	// chooses). A test clock that is never advanced therefore also holds
	// retries. Nil means [RealClock].
	Clock Clock
	// ResourceTimeout overrides the does-not-exist timer's length. Zero
	// means 15 s, or what the server's features say (30 s with
	// resource_timer_is_transient_error).
	ResourceTimeout time.Duration
	// Backoff chooses how long to wait, on Clock, before the n-th
	// consecutive retry of an ADS stream that failed without a response
	// (n starts at 0). Nil means [DefaultBackoff].
	Backoff func(n int) time.Duration
	// Logger receives the engine's logs. Nil discards them.
	Logger *slog.Logger
	// MeterProvider receives the engine's gRFC A78 metrics
	// (grpc.xds_client.*). Nil records nothing.
	MeterProvider metric.MeterProvider
	// FallbackPolicy decides when an authority falls back to its next
	// server (gRFC A71). Nil means [DefaultFallbackPolicy].
	FallbackPolicy FallbackPolicy
	// Switches pins gRPC's environment switches; nil reads them from the
	// environment with [features.SwitchesFromEnv] when New runs. They
	// reach the resource types too (registry.DecodeOptions.Switches and
	// registry.ResourceType.Enabled), so this is the one place that
	// decides.
	Switches *features.Switches
	// Target is the data plane target this engine serves, used as CSDS
	// client_scope and the grpc.target metric label. May be empty.
	Target string
	// UserAgentName and UserAgentVersion go into the node of the first
	// request of each stream. Empty means "xdsengine" and the module
	// version.
	UserAgentName, UserAgentVersion string
	// Store, when set, keeps what the engine accepts, and serves it when
	// no server of an authority answers: a process restarted during an
	// outage starts from its last good configuration (see [Store]).
	// Nil keeps nothing.
	Store Store
	// IgnoreCertificateProviders stops the check that every certificate
	// provider instance a Cluster or Listener names is in the bootstrap's
	// certificate_providers (gRFC A29), which gRPC always makes: such
	// resources are then accepted. Set it in a program that does its own
	// TLS and whose bootstrap therefore defines no providers.
	IgnoreCertificateProviders bool
}
