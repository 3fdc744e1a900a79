package relay_test

import (
	"context"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// rawStream is a hand-driven ADS stream to a relay, for tests that assert
// exactly what is sent: it NACKs, ACKs late or never, as the test says.
type rawStream[Req, Resp any] struct {
	send func(Req) error
	resp chan Resp
	// end ends the stream, as the client going away; it may be called
	// more than once.
	end func()
}

type (
	sotwStream  = rawStream[*discoverypb.DiscoveryRequest, *discoverypb.DiscoveryResponse]
	deltaStream = rawStream[*discoverypb.DeltaDiscoveryRequest, *discoverypb.DeltaDiscoveryResponse]
)

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// openSotw opens a State of the World ADS stream, ended with the test.
func openSotw(t *testing.T, addr string) *sotwStream {
	t.Helper()
	return openRaw(t, discoverypb.NewAggregatedDiscoveryServiceClient(dial(t, addr)).StreamAggregatedResources)
}

// openDelta opens an incremental ADS stream, ended with the test.
func openDelta(t *testing.T, addr string) *deltaStream {
	t.Helper()
	return openRaw(t, discoverypb.NewAggregatedDiscoveryServiceClient(dial(t, addr)).DeltaAggregatedResources)
}

// openRaw opens a stream with open and reads its responses into the
// returned stream's channel until the test ends.
func openRaw[Req, Resp any](t *testing.T,
	open func(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[Req, Resp], error)) *rawStream[*Req, *Resp] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := open(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &rawStream[*Req, *Resp]{send: st.Send, resp: make(chan *Resp, 100), end: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			s.resp <- m
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func (s *rawStream[Req, Resp]) request(t *testing.T, req Req) {
	t.Helper()
	if err := s.send(req); err != nil {
		t.Fatalf("sending a request: %v", err)
	}
}

// next returns the next response, failing the test after a while.
func (s *rawStream[Req, Resp]) next(t *testing.T) Resp {
	t.Helper()
	select {
	case m := <-s.resp:
		return m
	case <-time.After(wait):
		t.Fatal("no response")
	}
	panic("unreachable")
}

// none fails the test if a response arrives within d.
func (s *rawStream[Req, Resp]) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case m := <-s.resp:
		t.Fatalf("unexpected response: %v", m)
	case <-time.After(d):
	}
}

func node(id, cluster string) *corepb.Node { return &corepb.Node{Id: id, Cluster: cluster} }

func nackDetail() *rpcstatus.Status {
	return &rpcstatus.Status{Code: 3, Message: "rejected by the test"}
}

// quiet is how long a test waits to see that nothing is sent: long
// enough for a response storm to show thousands of responses.
const quiet = 300 * time.Millisecond
