package xdstest

import (
	"slices"
	"sync"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
)

// parkingCache stops go-control-plane's NACK storm, and answers the
// explicit wildcard of State of the World.
//
// SnapshotCache answers a NACK at once with the rejected version again,
// because the NACK carries the last *accepted* version_info, which differs
// from the snapshot's (simple.go CreateWatch; upstream issues
// envoyproxy/go-control-plane#962 and #46). A client that keeps NACKing
// then receives thousands of responses per second. parkingCache rewrites a
// NACK's version_info to the version it rejects before the SnapshotCache
// sees it, so the cache treats the client as up to date and parks the watch
// until the type's version changes (the next Set, or Update of that type).
//
// The rejected version is known from the response the NACK's nonce names.
// Nonces are per stream, and CreateWatch does not learn the stream, so the
// stream is carried over from the callbacks: the server calls
// OnStreamRequest(streamID, req) and then CreateWatch(req, ...) with the
// same pointer on the same goroutine (sotw/v3/xds.go process).
type parkingCache struct {
	cache.Cache

	mu sync.Mutex
	// sent is the last response sent per stream and type; the server
	// ignores requests with any other nonce (stale nonce), so the last one
	// is the only one a NACK can act on.
	sent map[streamType]sentResponse
	// parked maps a NACK request to the version it rejects, from
	// onRequest to CreateWatch.
	parked map[*discoverypb.DiscoveryRequest]parkedNACK
}

type streamType struct {
	stream  int64
	typeURL string
}

type sentResponse struct {
	nonce, version string
}

type parkedNACK struct {
	stream  int64
	version string
}

func newParkingCache(c cache.Cache) *parkingCache {
	return &parkingCache{
		Cache:  c,
		sent:   make(map[streamType]sentResponse),
		parked: make(map[*discoverypb.DiscoveryRequest]parkedNACK),
	}
}

// onResponse records the version sent with each nonce.
func (p *parkingCache) onResponse(stream int64, resp *discoverypb.DiscoveryResponse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent[streamType{stream, resp.GetTypeUrl()}] = sentResponse{nonce: resp.GetNonce(), version: resp.GetVersionInfo()}
}

// onRequest marks a NACK of the latest response for parking.
func (p *parkingCache) onRequest(stream int64, req *discoverypb.DiscoveryRequest) {
	if req.GetErrorDetail() == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.sent[streamType{stream, req.GetTypeUrl()}]
	if !ok || s.nonce != req.GetResponseNonce() || s.version == req.GetVersionInfo() {
		return
	}
	p.parked[req] = parkedNACK{stream: stream, version: s.version}
}

// onStreamClosed forgets the stream, including marks for NACKs the server
// dropped as stale (those never reach CreateWatch).
func (p *parkingCache) onStreamClosed(stream int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.sent {
		if k.stream == stream {
			delete(p.sent, k)
		}
	}
	for req, n := range p.parked {
		if n.stream == stream {
			delete(p.parked, req)
		}
	}
}

// CreateWatch parks marked NACKs and delegates everything else unchanged.
func (p *parkingCache) CreateWatch(req *cache.Request, sub cache.Subscription, ch chan cache.Response) (func(), error) {
	p.mu.Lock()
	n, ok := p.parked[req]
	delete(p.parked, req)
	p.mu.Unlock()
	wildcard := slices.Contains(req.GetResourceNames(), "*")
	if ok || wildcard {
		// A copy: the server keeps req, and the recorded requests must
		// stay what the client sent.
		req = proto.Clone(req).(*discoverypb.DiscoveryRequest)
		if ok {
			req.VersionInfo = n.version
		}
		if wildcard {
			// SnapshotCache (v0.14) answers a SotW request naming "*",
			// the explicit wildcard, with the resources named "*": none,
			// again at every ACK. With no names it sends every resource,
			// which is what the wildcard asks for.
			req.ResourceNames = nil
		}
	}
	return p.Cache.CreateWatch(req, sub, ch)
}
