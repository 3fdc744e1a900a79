package bootstrap

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/internal/xdsname"
)

// Bootstrap is gRPC's xDS bootstrap configuration (gRFC A27, A47, A71,
// A95), parsed. The same file serves gRPC and this engine. Build one with
// [Parse] or [FromEnv], or fill it in code.
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
	// ServerListenerResourceNameTemplate names the Listener of a gRPC
	// server (gRFC A36); "%s" is replaced by the listening address. It
	// has no default. [Bootstrap.ServerListenerName] applies it.
	ServerListenerResourceNameTemplate string
	// CertificateProviders is "certificate_providers" (gRFC A29), kept as
	// parsed. An engine checks the instance names Clusters and Listeners
	// refer to against its keys.
	CertificateProviders map[string]CertificateProvider
}

// ServerConfig is one entry of an "xds_servers" list.
type ServerConfig struct {
	// URI is "server_uri", a gRPC target such as "xds.example.com:443".
	URI string
	// ChannelCreds is the "channel_creds" list as written. A connection
	// uses the first entry of a type its [Credentials] know; the default
	// ones know "google_default", "insecure" and "tls".
	ChannelCreds []ChannelCreds
	// CallCreds is the "call_creds" list as written (gRFC A97). A
	// connection uses every entry of a type its [Credentials] know and
	// ignores the others; the default ones know "jwt_token_file".
	CallCreds []CallCreds
	// ServerFeatures is the "server_features" list as written. An engine
	// resolves the names against the features it knows (package features).
	ServerFeatures []string
	// Delta makes the engine speak incremental (delta) ADS to this server
	// rather than State of the World. A bootstrap file says it with the
	// server feature "delta_xds" (features.NameDeltaXDS), which gRPC
	// clients ignore; either one is enough.
	Delta bool
}

// InsecureServer is a ServerConfig for uri with insecure credentials, for
// loopback management servers and tests.
func InsecureServer(uri string, serverFeatures ...string) ServerConfig {
	return ServerConfig{URI: uri, ChannelCreds: []ChannelCreds{{Type: "insecure"}}, ServerFeatures: serverFeatures}
}

// String returns the server URI.
func (s ServerConfig) String() string { return s.URI }

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

// ListenerName returns the Listener resource name for a data plane target
// such as "xds:///example.com:443" or "xds://authority.example/svc"
// (gRFC A47): a target with an authority uses that authority's
// client_listener_resource_name_template (by default
// "xdstp://<authority>/envoy.config.listener.v3.Listener/%s"), one without
// uses client_default_listener_resource_name_template (by default "%s").
// A target that is not a URI is taken as the name part itself.
func (b *Bootstrap) ListenerName(target string) (string, error) {
	authority, endpoint := "", target
	if u, err := url.Parse(target); err == nil && u.Scheme != "" && (u.Opaque != "" || u.Host != "" || u.Path != "") {
		authority = u.Host
		endpoint = strings.TrimPrefix(u.Path, "/")
		if u.Opaque != "" {
			endpoint = u.Opaque
		}
	}
	if endpoint == "" {
		return "", fmt.Errorf("target %q: no endpoint name", target)
	}
	if authority == "" {
		tmpl := b.ClientDefaultListenerResourceNameTemplate
		if tmpl == "" {
			tmpl = "%s"
		}
		return xdsname.ExpandTemplate(tmpl, endpoint), nil
	}
	a, ok := b.Authorities[authority]
	if !ok {
		return "", fmt.Errorf("target %q: authority %q is not in the bootstrap", target, authority)
	}
	tmpl := a.ClientListenerResourceNameTemplate
	if tmpl == "" {
		tmpl = "xdstp://" + url.PathEscape(authority) + "/envoy.config.listener.v3.Listener/%s"
	}
	return xdsname.ExpandTemplate(tmpl, endpoint), nil
}
