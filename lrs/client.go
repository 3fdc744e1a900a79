package lrs

import (
	"fmt"
	"strings"
	"sync"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
)

// ClientFeature is the client feature the first request of each stream
// carries: the client honours send_all_clusters.
const ClientFeature = "envoy.lrs.supports_send_all_clusters"

// Method is the full gRPC method name of the LRS stream.
const Method = "/envoy.service.load_stats.v3.LoadReportingService/StreamLoadStats"

// Client reports load to xDS servers on behalf of one engine: over the
// engine's transport and credentials for each server, with its node,
// clock and backoff. It keeps one stream per server, shared by every
// store reporting to that server, for as long as one does.
type Client struct {
	e *engine.Engine

	mu      sync.Mutex
	servers map[string]*server // by serverKey
	closed  bool
	wg      sync.WaitGroup
}

// NewClient returns a client that reports load through e. Close it
// before e.
func NewClient(e *engine.Engine) *Client {
	return &Client{e: e, servers: map[string]*server{}}
}

// ReportLoad starts reporting the load of cluster (and EDS service name
// service, "" for none) to server, and returns its store. The stream to
// the server opens with the first store and ends with the last cancel.
// Two calls for the same server, cluster and service share one store;
// each has its own cancel, and cancel is idempotent.
func (c *Client) ReportLoad(srv bootstrap.ServerConfig, cluster, service string) (*Store, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return newStore(cluster, service, c.e.Clock().Now()), func() {}
	}
	key := serverKey(srv)
	s := c.servers[key]
	if s == nil {
		s = newServer(c, srv)
		c.servers[key] = s
		c.wg.Add(1)
		go s.run()
	}
	st := s.addStore(cluster, service)
	var once sync.Once
	return st, func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if s.removeStore(cluster, service) {
				delete(c.servers, key)
				s.stop()
			}
		})
	}
}

// ReportLoadToSelf reports the load of cluster to the server its
// resource came from, the server an lrs_server of "self" means:
// serverURI is the Update.ServerURI of the cds.Cluster. It fails with
// codes.NotFound if no server of the bootstrap has that URI.
func (c *Client) ReportLoadToSelf(serverURI, cluster, service string) (*Store, func(), error) {
	srv, ok := c.e.ServerConfig(serverURI)
	if !ok {
		return nil, nil, status.Errorf(codes.NotFound, "lrs: no server %q in the bootstrap (node ID: %s)", serverURI, c.e.NodeID())
	}
	st, cancel := c.ReportLoad(srv, cluster, service)
	return st, cancel, nil
}

// Close stops every stream and waits for them to end. Load recorded
// since the last report is not sent. ReportLoad after Close returns a
// store that reports nowhere.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	servers := c.servers
	c.servers = map[string]*server{}
	for _, s := range servers {
		s.stop()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// node is the engine's node with the LRS client feature.
func (c *Client) node() *corepb.Node {
	n := c.e.Node()
	n.ClientFeatures = append(n.ClientFeatures, ClientFeature)
	return n
}

// serverKey tells servers apart as the engine does: by URI, credentials
// and features.
func serverKey(s bootstrap.ServerConfig) string {
	var b strings.Builder
	b.WriteString(s.URI)
	for _, cc := range s.ChannelCreds {
		fmt.Fprintf(&b, "\x00c:%s:%s", cc.Type, cc.Config)
	}
	for _, cc := range s.CallCreds {
		fmt.Fprintf(&b, "\x00k:%s:%s", cc.Type, cc.Config)
	}
	return b.String()
}
