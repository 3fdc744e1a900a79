package xdstest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// observations is what the server records for assertions.
type observations struct {
	mu sync.Mutex
	// changed is closed and replaced whenever anything below changes, so
	// waiters can block on it without polling.
	changed   chan struct{}
	requests  []*discoverypb.DiscoveryRequest
	streams   [][]*discoverypb.DiscoveryRequest // per SotW ADS stream, in open order
	responses []*discoverypb.DiscoveryResponse
	open      int
	opened    int
	// countOnly keeps counts instead of messages (Options.CountOnly).
	countOnly bool
	counts    Counts
}

// Counts are running totals of what a server saw, kept in every mode (see
// Options.CountOnly).
type Counts struct {
	// Requests is the number of SotW ADS requests received, NACKs the
	// number of those that carried error_detail.
	Requests, NACKs int
	// Responses is the number of responses sent; ResourceErrors the number
	// of xRFC TP3 resource_errors entries they carried.
	Responses, ResourceErrors int
	// StreamsOpened is the number of SotW ADS streams opened since Start.
	StreamsOpened int
	// ConnectionsRefused is the number of client connections closed on
	// arrival because the server was stopped ([Server.Stop]).
	ConnectionsRefused int
}

func (o *observations) init() { o.changed = make(chan struct{}) }

// notify wakes all waiters; o.mu must be held.
func (o *observations) notify() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// intercept records every DiscoveryRequest as it comes off the wire.
//
// The callbacks cannot do this: go-control-plane copies the stream's node
// into every request that has none before calling OnStreamRequest
// (sotw/v3/xds.go), so "node only on the first request" could not be
// asserted, and it also rewrites requests later (parkingCache works on a
// copy, but the server owns the pointer). The clone is taken inside
// RecvMsg, before the server sees the message.
func (o *observations) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod != discoverypb.AggregatedDiscoveryService_StreamAggregatedResources_FullMethodName {
		return handler(srv, ss)
	}
	o.mu.Lock()
	idx := len(o.streams)
	if !o.countOnly {
		o.streams = append(o.streams, nil)
	}
	o.mu.Unlock()
	return handler(srv, &recordingStream{ServerStream: ss, o: o, idx: idx})
}

type recordingStream struct {
	grpc.ServerStream
	o   *observations
	idx int
}

func (r *recordingStream) RecvMsg(m any) error {
	err := r.ServerStream.RecvMsg(m)
	if req, ok := m.(*discoverypb.DiscoveryRequest); ok && err == nil {
		if r.o.countOnly {
			r.o.countRequest(req)
		} else {
			r.o.recordRequest(r.idx, proto.Clone(req).(*discoverypb.DiscoveryRequest))
		}
	}
	return err
}

func (o *observations) recordRequest(stream int, req *discoverypb.DiscoveryRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.countRequestLocked(req)
	o.requests = append(o.requests, req)
	o.streams[stream] = append(o.streams[stream], req)
	o.notify()
}

// countRequest counts a request without keeping it (CountOnly). Waiters
// are not woken: nothing they look at changed.
func (o *observations) countRequest(req *discoverypb.DiscoveryRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.countRequestLocked(req)
}

func (o *observations) countRequestLocked(req *discoverypb.DiscoveryRequest) {
	o.counts.Requests++
	if req.GetErrorDetail() != nil {
		o.counts.NACKs++
	}
}

// recordResponse counts resp and, unless CountOnly, keeps a copy of it.
func (o *observations) recordResponse(resp *discoverypb.DiscoveryResponse) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.counts.Responses++
	o.counts.ResourceErrors += len(resp.GetResourceErrors())
	if o.countOnly {
		return
	}
	o.responses = append(o.responses, proto.Clone(resp).(*discoverypb.DiscoveryResponse))
	o.notify()
}

func (o *observations) streamOpened() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open++
	o.opened++
	o.counts.StreamsOpened++
	o.notify()
}

func (o *observations) streamClosed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.open--
	o.notify()
}

// Requests returns every SotW ADS request received so far, on all streams,
// in arrival order, exactly as sent by the client (in particular, node is
// present only where the client set it). The messages must not be
// modified.
func (s *Server) Requests() []*discoverypb.DiscoveryRequest {
	s.obs.mu.Lock()
	defer s.obs.mu.Unlock()
	return slices.Clone(s.obs.requests)
}

// StreamRequests returns the requests grouped by ADS stream, streams in the
// order they were opened (across Stop and Restart), requests in arrival
// order. A stream that sent nothing yet has an empty group. Use it to
// assert per-stream rules, such as node being set on the first request of
// each stream only. The messages must not be modified.
func (s *Server) StreamRequests() [][]*discoverypb.DiscoveryRequest {
	s.obs.mu.Lock()
	defer s.obs.mu.Unlock()
	out := make([][]*discoverypb.DiscoveryRequest, len(s.obs.streams))
	for i, reqs := range s.obs.streams {
		out[i] = slices.Clone(reqs)
	}
	return out
}

// NACKs returns the requests that carry error_detail, in arrival order.
func (s *Server) NACKs() []*discoverypb.DiscoveryRequest {
	s.obs.mu.Lock()
	defer s.obs.mu.Unlock()
	var out []*discoverypb.DiscoveryRequest
	for _, r := range s.obs.requests {
		if r.GetErrorDetail() != nil {
			out = append(out, r)
		}
	}
	return out
}

// Responses returns every response sent so far, in sending order, as sent
// (nonce included, wrapped resources without TTL). The messages must not be
// modified.
func (s *Server) Responses() []*discoverypb.DiscoveryResponse {
	s.obs.mu.Lock()
	defer s.obs.mu.Unlock()
	return slices.Clone(s.obs.responses)
}

// WaitForRequest returns the first request, in arrival order, for which
// pred is true, waiting for it if none has arrived yet. Requests that
// arrived before the call count, so there is no race with the client. It
// fails when ctx ends first. See [IsACK] and [IsNACK] for common
// predicates.
func (s *Server) WaitForRequest(ctx context.Context, pred func(*discoverypb.DiscoveryRequest) bool) (*discoverypb.DiscoveryRequest, error) {
	next := 0
	for {
		s.obs.mu.Lock()
		reqs := s.obs.requests[next:]
		next = len(s.obs.requests)
		changed := s.obs.changed
		s.obs.mu.Unlock()
		for _, r := range reqs {
			if pred(r) {
				return r, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("xdstest %s: no matching request among %d: %w", s.name, next, ctx.Err())
		}
	}
}

// Counts returns the running totals, in every mode.
func (s *Server) Counts() Counts {
	s.obs.mu.Lock()
	c := s.obs.counts
	s.obs.mu.Unlock()
	c.ConnectionsRefused = s.lis.refusedCount()
	return c
}

// OpenStreams returns the number of ADS streams, SotW and incremental,
// currently open.
func (s *Server) OpenStreams() int {
	s.obs.mu.Lock()
	defer s.obs.mu.Unlock()
	return s.obs.open
}

// StreamsOpened returns the number of ADS streams, SotW and incremental,
// opened since Start.
func (s *Server) StreamsOpened() int {
	s.obs.mu.Lock()
	defer s.obs.mu.Unlock()
	return s.obs.opened
}

// WaitForOpenStreams waits until exactly n SotW ADS streams are open, e.g.
// 1 to know a client is attached, 0 to know it left. It fails when ctx
// ends first.
func (s *Server) WaitForOpenStreams(ctx context.Context, n int) error {
	for {
		s.obs.mu.Lock()
		open := s.obs.open
		changed := s.obs.changed
		s.obs.mu.Unlock()
		if open == n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("xdstest %s: %d open streams, want %d: %w", s.name, open, n, ctx.Err())
		}
	}
}

// IsACK returns a predicate for [Server.WaitForRequest] matching an ACK of
// version for typeURL: a request with that version_info, a response nonce
// and no error_detail.
func IsACK(typeURL, version string) func(*discoverypb.DiscoveryRequest) bool {
	return func(r *discoverypb.DiscoveryRequest) bool {
		return r.GetTypeUrl() == typeURL && r.GetVersionInfo() == version &&
			r.GetResponseNonce() != "" && r.GetErrorDetail() == nil
	}
}

// IsNACK returns a predicate for [Server.WaitForRequest] matching a NACK
// for typeURL: a request with error_detail.
func IsNACK(typeURL string) func(*discoverypb.DiscoveryRequest) bool {
	return func(r *discoverypb.DiscoveryRequest) bool {
		return r.GetTypeUrl() == typeURL && r.GetErrorDetail() != nil
	}
}
