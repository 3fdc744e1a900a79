package xdstest

import (
	"encoding/json"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// DefaultNodeID is the node ID of the bootstraps [Server.Bootstrap] writes
// when none is given.
const DefaultNodeID = "xdstest-node"

// BootstrapOptions shapes the bootstrap that [Server.Bootstrap] writes.
type BootstrapOptions struct {
	// NodeID is the node's ID; empty means [DefaultNodeID]. The server
	// serves every node the same resources.
	NodeID string
	// ServerFeatures are the server's "server_features", such as
	// "fail_on_data_errors".
	ServerFeatures []string
	// Fallback servers follow this one in "xds_servers", in order (gRFC
	// A71).
	Fallback []*Server
	// Authorities are the bootstrap's "authorities" (gRFC A47), by name,
	// for clients that watch xdstp:// resource names.
	Authorities map[string]Authority
	// ServerListenerResourceNameTemplate names an xDS-enabled server's
	// Listener (gRFC A36), such as "grpc/server?xds.resource.listening_address=%s".
	ServerListenerResourceNameTemplate string
	// CertificateProviders are the bootstrap's "certificate_providers"
	// (gRFC A29), by instance name. A file_watcher's config must name
	// files, as gRPC requires.
	CertificateProviders map[string]bootstrap.CertificateProvider
}

// Authority is one entry of [BootstrapOptions.Authorities].
type Authority struct {
	// Servers are the authority's "xds_servers", in priority order; each
	// has the bootstrap's ServerFeatures. Empty means the top-level
	// servers.
	Servers []*Server
	// FallbackOnReachabilityOnly makes the client fall back to the
	// authority's next server whenever the current one is unreachable,
	// even with every resource cached (gRFC A95).
	FallbackOnReachabilityOnly bool
}

// ServerConfig is the bootstrap's entry for this server: its address
// with insecure credentials and the given server features.
func (s *Server) ServerConfig(features ...string) bootstrap.ServerConfig {
	return bootstrap.InsecureServer(s.Addr(), features...)
}

// Bootstrap returns a gRPC xDS bootstrap (the JSON that GRPC_XDS_BOOTSTRAP
// names, or GRPC_XDS_BOOTSTRAP_CONFIG holds) that points at this server,
// for a program or test to parse with bootstrap.Parse or hand to a gRPC
// client.
func (s *Server) Bootstrap(opts BootstrapOptions) []byte {
	type server struct {
		URI            string           `json:"server_uri"`
		ChannelCreds   []map[string]any `json:"channel_creds"`
		ServerFeatures []string         `json:"server_features,omitempty"`
	}
	type authority struct {
		Servers                    []server `json:"xds_servers,omitempty"`
		FallbackOnReachabilityOnly bool     `json:"fallback_on_reachability_only,omitempty"`
	}
	entries := func(srvs []*Server) []server {
		var out []server
		for _, srv := range srvs {
			out = append(out, server{URI: srv.Addr(), ChannelCreds: []map[string]any{{"type": "insecure"}}, ServerFeatures: opts.ServerFeatures})
		}
		return out
	}
	id := opts.NodeID
	if id == "" {
		id = DefaultNodeID
	}
	root := map[string]any{
		"xds_servers": entries(append([]*Server{s}, opts.Fallback...)),
		"node":        map[string]any{"id": id},
	}
	if len(opts.Authorities) > 0 {
		auths := make(map[string]authority, len(opts.Authorities))
		for name, a := range opts.Authorities {
			auths[name] = authority{Servers: entries(a.Servers), FallbackOnReachabilityOnly: a.FallbackOnReachabilityOnly}
		}
		root["authorities"] = auths
	}
	if opts.ServerListenerResourceNameTemplate != "" {
		root["server_listener_resource_name_template"] = opts.ServerListenerResourceNameTemplate
	}
	if len(opts.CertificateProviders) > 0 {
		type provider struct {
			PluginName string          `json:"plugin_name"`
			Config     json.RawMessage `json:"config,omitempty"`
		}
		providers := make(map[string]provider, len(opts.CertificateProviders))
		for name, p := range opts.CertificateProviders {
			providers[name] = provider{PluginName: p.PluginName, Config: p.Config}
		}
		root["certificate_providers"] = providers
	}
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		panic("xdstest: bootstrap: " + err.Error()) // plain strings and slices always marshal
	}
	return b
}
