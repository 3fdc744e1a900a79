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
	entry := func(srv *Server, features []string) server {
		return server{URI: srv.Addr(), ChannelCreds: []map[string]any{{"type": "insecure"}}, ServerFeatures: features}
	}
	servers := []server{entry(s, opts.ServerFeatures)}
	for _, f := range opts.Fallback {
		servers = append(servers, entry(f, opts.ServerFeatures))
	}
	id := opts.NodeID
	if id == "" {
		id = DefaultNodeID
	}
	b, err := json.MarshalIndent(map[string]any{
		"xds_servers": servers,
		"node":        map[string]any{"id": id},
	}, "", "  ")
	if err != nil {
		panic("xdstest: bootstrap: " + err.Error()) // plain strings and slices always marshal
	}
	return b
}
