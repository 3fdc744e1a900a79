// Package relaytest runs an xDS relay (package relay) on loopback, for
// tests and benchmarks of clients behind a relay:
//
//	up := xdstest.NewServer(t, xdstest.Options{}) // the upstream
//	cfg := relaytest.Config(up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}))
//	r := relaytest.NewServer(t, cfg, relaytest.Options{})
//	bs := r.Bootstrap(relaytest.BootstrapOptions{NodeID: "client-1", Cluster: "blue"})
//	// ... start N clients with bs: they share the relay's one upstream stream
//
// The relay serves plaintext on 127.0.0.1, and ends every goroutine of
// its own when closed.
package relaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
)

// Options configure a Server.
type Options struct {
	// Port is the loopback port to listen on; 0 picks a free one. Set it
	// to the port of a closed relay to restart one at the same address.
	Port int
	// ServerOptions are given to the gRPC server, such as credentials.
	ServerOptions []grpc.ServerOption
}

// Server is a relay serving on loopback.
type Server struct {
	relay  *relay.Relay
	addr   string
	port   int
	grpc   *grpc.Server
	cancel context.CancelFunc
	served chan struct{}
}

// FastDial shortens gRPC's reconnect backoff, which starts at a second,
// for tests: the relay's engines and test clients reconnect within tens of
// milliseconds.
var FastDial = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
	MinConnectTimeout: time.Second,
})

// Config is a relay configuration for the upstream servers of a gRPC
// bootstrap (JSON, such as an xdstest.Server's Bootstrap), with the
// built-in types, short retries, and gRPC's environment switches pinned to
// their defaults. It panics on a bootstrap that does not parse.
func Config(bootstrapJSON []byte) relay.Config {
	bs, err := bootstrap.Parse(bootstrapJSON)
	if err != nil {
		panic(fmt.Sprintf("relaytest: the bootstrap does not parse: %v", err))
	}
	sw := features.Switches{}
	return relay.Config{Upstream: engine.Config{
		Bootstrap: bs,
		Registry:  builtin.Registry(),
		Transport: transport.GRPC(FastDial),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &sw,
	}}
}

// Start starts a relay of cfg on loopback.
func Start(cfg relay.Config, opts Options) (*Server, error) {
	r, err := relay.New(cfg)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", opts.Port))
	if err != nil {
		r.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{relay: r, addr: lis.Addr().String(), port: lis.Addr().(*net.TCPAddr).Port, grpc: grpc.NewServer(opts.ServerOptions...), cancel: cancel, served: make(chan struct{})}
	r.Register(ctx, s.grpc, nil)
	go func() {
		defer close(s.served)
		_ = s.grpc.Serve(lis)
	}()
	return s, nil
}

// NewServer starts a relay of cfg on loopback, closed when the test ends.
func NewServer(t testing.TB, cfg relay.Config, opts Options) *Server {
	t.Helper()
	s, err := Start(cfg, opts)
	if err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Relay returns the relay.
func (s *Server) Relay() *relay.Relay { return s.relay }

// Addr returns the address the relay listens on, "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Port returns the port the relay listens on, for a restart at the same
// address (Options.Port).
func (s *Server) Port() int { return s.port }

// Close stops serving, ending every downstream stream, and closes the
// relay. It may be called more than once.
func (s *Server) Close() {
	s.grpc.Stop()
	<-s.served
	s.cancel()
	s.relay.Close()
}

// BootstrapOptions shape a downstream client's bootstrap.
type BootstrapOptions struct {
	NodeID, Cluster string
	// Metadata is the node's metadata.
	Metadata map[string]any
	// Delta makes the client speak incremental xDS to the relay.
	Delta bool
	// ServerFeatures are the relay's server_features, such as
	// "fail_on_data_errors".
	ServerFeatures []string
}

// Bootstrap returns a gRPC bootstrap (JSON) of a client of the relay,
// plaintext.
func (s *Server) Bootstrap(opts BootstrapOptions) []byte {
	server := map[string]any{
		"server_uri":    s.addr,
		"channel_creds": []map[string]any{{"type": "insecure"}},
	}
	sf := append([]string(nil), opts.ServerFeatures...)
	if opts.Delta {
		sf = append(sf, features.NameDeltaXDS)
	}
	if len(sf) > 0 {
		server["server_features"] = sf
	}
	node := map[string]any{"id": opts.NodeID, "cluster": opts.Cluster}
	if opts.Metadata != nil {
		node["metadata"] = opts.Metadata
	}
	b, err := json.Marshal(map[string]any{"xds_servers": []any{server}, "node": node})
	if err != nil {
		panic(err)
	}
	return b
}
