package lrs

import (
	"sync"

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
	servers map[string]*server // by serverKey; a server leaves with its last store
	closed  bool
	wg      sync.WaitGroup // the servers' goroutines
}

// NewClient returns a client that reports load through e. Close it
// before e.
func NewClient(e *engine.Engine) *Client {
	return &Client{e: e, servers: map[string]*server{}}
}

// ReportLoad starts reporting the load of cluster (and EDS service name
// service, "" for none) to server, and returns its store. The stream to
// the server opens with the first store. Two calls for the same server,
// cluster and service share one store; each has its own cancel, and
// cancel is idempotent.
//
// Cancel when done recording: cancel does not wait, and loses nothing
// recorded before it. The store's load not yet reported goes in the
// server's next report, after which the store is dropped; the last
// cancel of a server's stores sends that report at once, as the stream's
// final one, and then ends the stream (see [FinalReportTimeout]).
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
			if s.releaseStore(cluster, service) {
				if c.servers[key] == s {
					delete(c.servers, key)
				}
				s.finish()
			}
		})
	}
}

// Close ends every stream and returns when they have ended. Each stream
// first sends the load its stores recorded since their last report, as
// the last cancel does: Close waits for the server to have read it, or
// for [FinalReportTimeout] on the engine's clock, whichever comes first.
// A store's cancel after Close does nothing; ReportLoad after Close
// returns a store that reports nowhere.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	servers := c.servers
	c.servers = map[string]*server{}
	for _, s := range servers {
		s.finish()
	}
	c.mu.Unlock()
	c.wg.Wait()
}
