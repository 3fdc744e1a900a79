package scriptedads

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// DeltaStream is one DeltaAggregatedResources call, as seen by the
// server: the incremental counterpart of [Stream], driven the same way.
// Its methods are safe for concurrent use.
type DeltaStream struct {
	index int

	sendCh  chan deltaSend
	closing chan struct{}
	served  chan struct{}
	done    chan struct{}

	mu       sync.Mutex
	queue    []*discoverypb.DeltaDiscoveryRequest
	recvErr  error
	closeErr error
	closed   bool
	nonce    int
	changed  chan struct{}
}

type deltaSend struct {
	resp  *discoverypb.DeltaDiscoveryResponse
	reply chan sendResult
}

// Index returns the stream's position, from 0, among the server's delta
// streams.
func (st *DeltaStream) Index() int { return st.index }

// Done returns a channel closed once the stream has ended.
func (st *DeltaStream) Done() <-chan struct{} { return st.done }

// Recv returns the next request received, in arrival order, waiting for
// one if need be; once none is left and the stream has ended, the error
// that ended it.
func (st *DeltaStream) Recv(ctx context.Context) (*discoverypb.DeltaDiscoveryRequest, error) {
	for {
		st.mu.Lock()
		if len(st.queue) > 0 {
			req := st.queue[0]
			st.queue = st.queue[1:]
			st.mu.Unlock()
			return req, nil
		}
		err, ch := st.recvErr, st.changed
		st.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// RecvT is Recv for at most 10 seconds; it fails the test if no request
// arrives in time.
func (st *DeltaStream) RecvT(t testing.TB) *discoverypb.DeltaDiscoveryRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := st.Recv(ctx)
	if err != nil {
		t.Fatalf("scriptedads: delta stream %d: waiting for a request: %v", st.index, err)
		return nil
	}
	return req
}

// ExpectNoRequest fails the test if a request is waiting or arrives
// within d.
func (st *DeltaStream) ExpectNoRequest(t testing.TB, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if req, err := st.Recv(ctx); err == nil {
		t.Fatalf("scriptedads: delta stream %d: unexpected request: %s", st.index, prototext.Format(req))
	}
}

// SendT sends resp and returns its nonce: resp's own, or else the
// stream's next automatic one ("1", "2", ...). It fails the test if the
// stream has ended.
func (st *DeltaStream) SendT(t testing.TB, resp *discoverypb.DeltaDiscoveryResponse) (nonce string) {
	t.Helper()
	req := deltaSend{resp: proto.Clone(resp).(*discoverypb.DeltaDiscoveryResponse), reply: make(chan sendResult, 1)}
	select {
	case st.sendCh <- req:
	case <-st.served:
		t.Fatalf("scriptedads: delta stream %d has ended", st.index)
		return ""
	}
	r := <-req.reply
	if r.err != nil {
		t.Fatalf("scriptedads: delta stream %d: send: %v", st.index, r.err)
	}
	return r.nonce
}

// Close ends the stream with err as its status and returns once it has
// ended.
func (st *DeltaStream) Close(err error) {
	st.mu.Lock()
	if !st.closed {
		st.closed = true
		st.closeErr = err
		close(st.closing)
	}
	st.mu.Unlock()
	<-st.done
}

func (st *DeltaStream) serve(ss discoverypb.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	ctx := ss.Context()
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-st.closing:
			st.mu.Lock()
			defer st.mu.Unlock()
			return st.closeErr
		case req := <-st.sendCh:
			if req.resp.Nonce == "" {
				st.mu.Lock()
				st.nonce++
				req.resp.Nonce = strconv.Itoa(st.nonce)
				st.mu.Unlock()
			}
			err := ss.Send(req.resp)
			req.reply <- sendResult{nonce: req.resp.Nonce, err: err}
		}
	}
}

func (st *DeltaStream) push(req *discoverypb.DeltaDiscoveryRequest, err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if err != nil {
		st.recvErr = err
	} else {
		st.queue = append(st.queue, req)
	}
	close(st.changed)
	st.changed = make(chan struct{})
}

// DeltaAggregatedResources serves an incremental stream.
func (svc *service) DeltaAggregatedResources(ss discoverypb.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	s := svc.s
	st := &DeltaStream{
		sendCh:  make(chan deltaSend),
		closing: make(chan struct{}),
		served:  make(chan struct{}),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	s.mu.Lock()
	st.index = len(s.deltaStreams)
	s.deltaStreams = append(s.deltaStreams, st)
	s.notifyLocked()
	s.mu.Unlock()
	s.wg.Go(func() {
		for {
			req, err := ss.Recv()
			st.push(req, err)
			if err != nil {
				break
			}
		}
		<-st.served
		close(st.done)
	})
	defer close(st.served)
	return st.serve(ss)
}

// DeltaStreamCount returns how many delta streams have been opened.
func (s *Server) DeltaStreamCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.deltaStreams)
}

// NextDeltaStream returns the next delta stream not yet returned, in the
// order they were opened, waiting for one if need be.
func (s *Server) NextDeltaStream(ctx context.Context) (*DeltaStream, error) {
	for {
		s.mu.Lock()
		if s.nextDelta < len(s.deltaStreams) {
			st := s.deltaStreams[s.nextDelta]
			s.nextDelta++
			s.mu.Unlock()
			return st, nil
		}
		closed, ch := s.closed, s.changed
		s.mu.Unlock()
		if closed {
			return nil, errClosed
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// WaitDeltaStream is NextDeltaStream for at most 10 seconds; it fails the
// test if no delta stream opens in time.
func (s *Server) WaitDeltaStream(t testing.TB) *DeltaStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := s.NextDeltaStream(ctx)
	if err != nil {
		t.Fatalf("scriptedads: waiting for a delta stream: %v", err)
		return nil
	}
	return st
}

// DeltaResponse builds an incremental response: resources by name (each
// with version), removed names, and a system version.
func DeltaResponse(typeURL, systemVersion string, resources []*discoverypb.Resource, removed ...string) *discoverypb.DeltaDiscoveryResponse {
	return &discoverypb.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: systemVersion, Resources: resources, RemovedResources: removed}
}
