package engine

import (
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// Bootstrap is gRPC's xDS bootstrap configuration (gRFC A27, A47, A71,
// A95), parsed. The same file serves gRPC and this engine. Build one with
// [ParseBootstrap] or [BootstrapFromEnv], or fill it in code.
type Bootstrap struct {
	// Servers is the top-level "xds_servers" list, in priority order
	// (gRFC A71: the first is the primary, the others are fallbacks).
	Servers []ServerConfig
	// Node identifies this client to the servers ("node").
	Node Node
	// Authorities maps an xdstp:// authority to its servers (gRFC A47).
	Authorities map[string]Authority
	// ClientDefaultListenerResourceNameTemplate turns a data plane target
	// without an authority into a Listener name (gRFC A47); "%s" is
	// replaced by the target. Empty means the target itself.
	ClientDefaultListenerResourceNameTemplate string
	// ServerListenerResourceNameTemplate is kept for gRPC servers; this
	// engine does not use it.
	ServerListenerResourceNameTemplate string
	// CertificateProviders is "certificate_providers", kept as parsed and
	// not used by the engine.
	CertificateProviders map[string]CertificateProvider
}

// ServerConfig is one entry of an "xds_servers" list.
type ServerConfig struct {
	// URI is "server_uri", a gRPC target such as "xds.example.com:443".
	URI string
	// ChannelCreds is the "channel_creds" list as written. The transport
	// uses the first type it supports; the default one supports
	// "google_default", "insecure" and "tls" (see [GRPCTransport]).
	ChannelCreds []ChannelCreds
	// CallCreds is the "call_creds" list as written (gRFC A97). The
	// transport uses every type it supports and ignores the others; the
	// default one supports "jwt_token_file".
	CallCreds []CallCreds
	// ServerFeatures is the "server_features" list as written. The engine
	// resolves the names against [features.Builtin] and Config.Features.
	ServerFeatures []string
}

// InsecureServer is a ServerConfig for uri with insecure credentials, for
// loopback management servers and tests.
func InsecureServer(uri string, serverFeatures ...string) ServerConfig {
	return ServerConfig{URI: uri, ChannelCreds: []ChannelCreds{{Type: "insecure"}}, ServerFeatures: serverFeatures}
}

// String returns the server URI.
func (s ServerConfig) String() string { return s.URI }

// key identifies a server for stream sharing: two authorities that list
// equal servers share one ADS stream.
func (s ServerConfig) key() string {
	var b strings.Builder
	b.WriteString(s.URI)
	for _, c := range s.ChannelCreds {
		b.WriteString("\x00c:")
		b.WriteString(c.Type)
		b.WriteByte(':')
		b.Write(c.Config)
	}
	for _, c := range s.CallCreds {
		b.WriteString("\x00k:")
		b.WriteString(c.Type)
		b.WriteByte(':')
		b.Write(c.Config)
	}
	for _, f := range s.ServerFeatures {
		b.WriteString("\x00f:")
		b.WriteString(f)
	}
	return b.String()
}

// ChannelCreds is one entry of "channel_creds".
type ChannelCreds struct {
	Type   string          // "insecure", "tls", "google_default", ...
	Config json.RawMessage // the type's "config" object, or nil
}

// CallCreds is one entry of "call_creds" (gRFC A97).
type CallCreds struct {
	Type   string          // "jwt_token_file", ...
	Config json.RawMessage // the type's "config" object, or nil
}

// Authority is one entry of "authorities" (gRFC A47).
type Authority struct {
	// Servers is the authority's "xds_servers"; empty means the top-level
	// list.
	Servers []ServerConfig
	// ClientListenerResourceNameTemplate turns a target into this
	// authority's Listener name; it must start with
	// "xdstp://<authority>/". Empty means
	// "xdstp://<authority>/envoy.config.listener.v3.Listener/%s".
	ClientListenerResourceNameTemplate string
	// FallbackOnReachabilityOnly makes the authority fall back to its next
	// server whenever the current one is unreachable, even with every
	// resource cached (gRFC A95).
	FallbackOnReachabilityOnly bool
}

// Node is the "node" object: who this client is. The engine adds the user
// agent and client features itself.
type Node struct {
	ID       string
	Cluster  string
	Locality Locality
	Metadata *structpb.Struct
}

// Locality is the node's locality.
type Locality struct {
	Region, Zone, SubZone string
}

// CertificateProvider is one entry of "certificate_providers".
type CertificateProvider struct {
	PluginName string
	Config     json.RawMessage
}

// Config configures an Engine. The engine does not modify it; a Config may
// be reused.
type Config struct {
	// Bootstrap holds the servers, node and authorities. Required: at
	// least one server.
	Bootstrap Bootstrap
	// Registry holds the resource types this engine can watch. Required.
	Registry *registry.Registry
	// Features are server features of the user's own, resolved by name
	// against the bootstrap's "server_features" together with
	// [features.Builtin]; on a name clash these win.
	Features []features.ServerFeature
	// Transport reaches the servers. Nil means gRPC with the credentials
	// the bootstrap names.
	Transport TransportBuilder
	// MaxResponseBytes is the largest DiscoveryResponse the engine accepts
	// from a server; the default transport applies it to its streams.
	// Zero means [DefaultMaxResponseBytes] (128 MiB; gRPC's own default
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
	// Clock drives every timer. Nil means the real clock.
	Clock Clock
	// ResourceTimeout overrides the does-not-exist timer's length. Zero
	// means 15 s, or what the server's features say (30 s with
	// resource_timer_is_transient_error).
	ResourceTimeout time.Duration
	// Backoff returns the delay before the n-th consecutive retry of an
	// ADS stream that failed without a response (n starts at 0). Nil
	// means gRPC's connection backoff: 1 s, ×1.6, ±20 % jitter, at most
	// 120 s.
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
}
