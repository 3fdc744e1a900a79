package xdstest_test

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// This file is a deliberately dumb ADS client: it sends exactly what the
// test tells it to, so the tests see go-control-plane's behaviour and not a
// client library's.

// dial returns a ClientConn to addr with a short reconnect backoff (gRPC's
// default starts at 1 s), closed at the end of the test.
func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.5, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		t.Fatalf("grpc.NewClient(%s): %v", addr, err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// adsClient is one ADS stream. A goroutine reads responses into resps
// until the stream ends; err holds the terminal error once done is closed.
type adsClient struct {
	t      *testing.T
	nodeID string
	stream discoverypb.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel context.CancelFunc
	resps  chan *discoverypb.DiscoveryResponse
	done   chan struct{}
	err    error
	sent   int
	names  map[string][]string // subscribed names per type URL
}

// openStream opens an ADS stream; it returns the error of NewStream.
func openStream(t *testing.T, cc *grpc.ClientConn, nodeID string, opts ...grpc.CallOption) (*adsClient, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := discoverypb.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx, opts...)
	if err != nil {
		cancel()
		return nil, err
	}
	c := &adsClient{
		t:      t,
		nodeID: nodeID,
		stream: stream,
		cancel: cancel,
		resps:  make(chan *discoverypb.DiscoveryResponse, 1000),
		done:   make(chan struct{}),
		names:  make(map[string][]string),
	}
	go func() {
		defer close(c.done)
		for {
			r, err := stream.Recv()
			if err != nil {
				c.err = err
				return
			}
			select {
			case c.resps <- r:
			case <-ctx.Done():
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-c.done
	})
	return c, nil
}

// mustOpen is openStream that fails the test on error. It waits for the
// channel to be ready, so it also serves to reconnect after a restart.
func mustOpen(t *testing.T, cc *grpc.ClientConn, nodeID string) *adsClient {
	t.Helper()
	c, err := openStream(t, cc, nodeID, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("StreamAggregatedResources: %v", err)
	}
	return c
}

// send sends req, with the node on the first request of the stream only,
// as gRPC clients do.
func (c *adsClient) send(req *discoverypb.DiscoveryRequest) {
	c.t.Helper()
	if c.sent == 0 {
		req.Node = &corepb.Node{Id: c.nodeID, ClientFeatures: []string{"xds.config.resource-in-sotw"}}
	}
	c.sent++
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("Send(%s): %v", req.GetTypeUrl(), err)
	}
}

// subscribe sends a request for names of typeURL with the given
// version_info (empty for a fresh subscription).
func (c *adsClient) subscribe(typeURL, version string, names ...string) {
	c.t.Helper()
	c.names[typeURL] = names
	c.send(&discoverypb.DiscoveryRequest{TypeUrl: typeURL, VersionInfo: version, ResourceNames: names})
}

// ack accepts resp.
func (c *adsClient) ack(resp *discoverypb.DiscoveryResponse) {
	c.t.Helper()
	c.send(&discoverypb.DiscoveryRequest{
		TypeUrl:       resp.GetTypeUrl(),
		VersionInfo:   resp.GetVersionInfo(),
		ResponseNonce: resp.GetNonce(),
		ResourceNames: c.names[resp.GetTypeUrl()],
	})
}

// nack rejects resp, keeping lastGood as version_info.
func (c *adsClient) nack(resp *discoverypb.DiscoveryResponse, lastGood string) {
	c.t.Helper()
	c.send(&discoverypb.DiscoveryRequest{
		TypeUrl:       resp.GetTypeUrl(),
		VersionInfo:   lastGood,
		ResponseNonce: resp.GetNonce(),
		ResourceNames: c.names[resp.GetTypeUrl()],
		ErrorDetail:   status.New(codes.InvalidArgument, "rejected by test").Proto(),
	})
}

// expect receives exactly one response for each of typeURLs, in any order
// (go-control-plane does not order types), and fails on any other.
func (c *adsClient) expect(typeURLs ...string) map[string]*discoverypb.DiscoveryResponse {
	c.t.Helper()
	got := make(map[string]*discoverypb.DiscoveryResponse)
	timeout := time.After(5 * time.Second)
	for len(got) < len(typeURLs) {
		select {
		case r := <-c.resps:
			tu := r.GetTypeUrl()
			if !slices.Contains(typeURLs, tu) || got[tu] != nil {
				c.t.Fatalf("unexpected response: type %s version %q (want one each of %v)", tu, r.GetVersionInfo(), typeURLs)
			}
			got[tu] = r
		case <-c.done:
			c.t.Fatalf("stream ended waiting for %v: %v", typeURLs, c.err)
		case <-timeout:
			c.t.Fatalf("timeout waiting for %v; got %d", typeURLs, len(got))
		}
	}
	return got
}

// expectOne receives one response of typeURL.
func (c *adsClient) expectOne(typeURL string) *discoverypb.DiscoveryResponse {
	c.t.Helper()
	return c.expect(typeURL)[typeURL]
}

// expectNone fails if a response arrives within d.
func (c *adsClient) expectNone(d time.Duration) {
	c.t.Helper()
	select {
	case r := <-c.resps:
		c.t.Fatalf("unexpected response: type %s version %q nonce %q", r.GetTypeUrl(), r.GetVersionInfo(), r.GetNonce())
	case <-c.done:
		c.t.Fatalf("stream ended: %v", c.err)
	case <-time.After(d):
	}
}

// streamErr waits for the stream to end and returns its error.
func (c *adsClient) streamErr() error {
	c.t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(5 * time.Second):
		c.t.Fatal("stream did not end")
		return nil
	}
}

// expectUnavailable checks that a new stream on cc fails with
// codes.Unavailable, whether at NewStream or at the first Recv.
func expectUnavailable(t *testing.T, cc *grpc.ClientConn, typeURL string) {
	t.Helper()
	c, err := openStream(t, cc, "node-down")
	if err == nil {
		// Send's error is io.EOF on a broken stream; the status comes
		// from Recv.
		_ = c.stream.Send(&discoverypb.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: []string{"x"}})
		err = c.streamErr()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("new stream on stopped server: %v, want code Unavailable", err)
	}
}

// names returns the sorted resource names a response carries, read from
// the decoded resources by decodeName.
func names(t *testing.T, r *discoverypb.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range r.GetResources() {
		out = append(out, decodeName(t, a))
	}
	sort.Strings(out)
	return out
}
