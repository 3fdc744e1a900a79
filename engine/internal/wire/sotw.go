package wire

import (
	"context"
	"slices"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

// stream is one ADS stream attempt, State of the World or incremental
// (delta). Requests are built from the host's state when they are
// written, not when the state changes, so a burst of watches of one type
// becomes a few requests (sendLoop).
type stream struct {
	cfg    Config
	host   Host
	ctx    context.Context
	cancel context.CancelFunc
	raw    RawStream // set once open
	// buffers is raw if it takes a message as buffers, else nil.
	buffers buffersSender
	delta   bool // incremental: DeltaDiscoveryRequest/Response

	// Guarded by cfg.Lock:
	started      bool // stream open, requests may be written
	ended        bool
	sentNode     bool
	seenResponse bool
	types        map[string]*streamType
	dirty        map[string]bool
	wake         chan struct{}

	holds holds

	// prev is what the stream keeps of the last response of each type
	// (remember). Only the receiving goroutine touches it.
	prev map[string]*lastResponse
	// scratch is the receiving goroutine's working memory (idleScratch's
	// while the goroutine runs), and yields when it last gave up its
	// processor (yieldIfLong).
	scratch *scratch
	yields  yieldClock
	// encNames is, per type, the encoding of the names of its last
	// request (marshalRequest). Only the send loop touches it.
	encNames map[string]encodedNames
	// unbuilt are the changes the request nextRequestLocked just built
	// carries, whose list of names the send loop builds with the lock
	// released. Only the send loop touches it.
	unbuilt Names
	// decodeOpts are the options of every resource's decode but for a
	// wrapper's name, built once: options built for each call are read
	// back, to be passed, from the narrow stores that just wrote them,
	// which costs a stall per resource.
	decodeOpts registry.DecodeOptions
}

// streamType is a stream's state for one resource type.
type streamType struct {
	nonce string            // of the last response; per stream
	nack  *rpcstatus.Status // error_detail for the next request
	// subs are the names of the last request written, with their
	// does-not-exist timers.
	subs map[string]*subscription
	// unsettled counts the subs whose timer may still run: with none, a
	// response has no timer to stop, and skips the lookups.
	unsettled int
	// last is what the last written request said, to skip exact repeats.
	last    []string
	lastVer string
	lastNon string
	written bool
	// applying: a response of this type is being applied in parts.
	applying bool
	// fresh are the subscriptions new in the request being written: their
	// timers start when it is.
	fresh []freshSub
	// spare are subscriptions allocated together for the names a request
	// adds (prepareFreshLocked), handed out one by one: a burst of 1,000
	// watches makes one allocation for its subscriptions, not 1,000. Each
	// batch lives while one of its subscriptions does.
	spare []subscription
}

type freshSub struct {
	name string
	sub  *subscription
}

// NewSotW returns a State-of-the-World ADS stream; Start opens it.
func NewSotW(cfg Config) Stream {
	ctx, cancel := context.WithCancel(context.Background())
	return &stream{cfg: cfg, host: cfg.Host, ctx: ctx, cancel: cancel,
		types: make(map[string]*streamType), dirty: make(map[string]bool), wake: make(chan struct{}, 1),
		prev:       make(map[string]*lastResponse),
		decodeOpts: registry.DecodeOptions{Server: cfg.Server, Switches: cfg.Switches, OwnsRaw: true, CertificateProviders: cfg.CertificateProviders}}
}

func (s *stream) Start() {
	s.cfg.Goroutines.Add(1)
	go s.run()
}

func (s *stream) StartedLocked() bool { return s.started }

func (s *stream) TypeChangedLocked(typeURL string) {
	s.markDirtyLocked(typeURL)
}

// EndLocked stops the stream and its timers.
func (s *stream) EndLocked() {
	if s.ended {
		return
	}
	s.ended = true
	s.cancel()
	for _, st := range s.types {
		for _, sub := range st.subs {
			sub.stopLocked()
		}
	}
}

// endWithLocked ends the stream and tells the host why.
func (s *stream) endWithLocked(err error) {
	if s.ended {
		return
	}
	s.EndLocked()
	s.host.EndedLocked(s, err, s.seenResponse)
}

func (s *stream) typeLocked(typeURL string) *streamType {
	st := s.types[typeURL]
	if st == nil {
		st = &streamType{subs: make(map[string]*subscription)}
		s.types[typeURL] = st
	}
	return st
}

// markDirtyLocked asks the writer to send the type's current state.
func (s *stream) markDirtyLocked(typeURL string) {
	if s.ended || s.dirty[typeURL] {
		// Already marked: the writer has yet to take it, and is woken
		// already or about to look. A burst of watches of one type marks
		// it once, not once per watch.
		return
	}
	s.dirty[typeURL] = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) run() {
	defer s.cfg.Goroutines.Done()
	raw, err := s.cfg.Open(s.ctx)
	s.cfg.Lock.Lock()
	if err != nil {
		s.endWithLocked(err)
		s.cfg.Lock.Unlock()
		return
	}
	if s.ended {
		s.cfg.Lock.Unlock()
		return
	}
	s.raw = raw
	s.buffers, _ = raw.(buffersSender)
	s.started = true
	for _, t := range s.host.SubscribedTypesLocked() {
		s.markDirtyLocked(t)
	}
	s.cfg.Goroutines.Add(1)
	s.cfg.Lock.Unlock()
	go s.sendLoop()
	s.recvLoop()
}

func (s *stream) sendLoop() {
	defer s.cfg.Goroutines.Done()
	// Batching follows from this loop: each request carries everything
	// pending when it is built, and what changes while it is built and
	// written waits for the next one. A single watch on an idle stream is
	// written at once; a burst of watches leaves in requests that grow
	// with it, as many as the burst outlasts the writes, and the stream's
	// own flow control (gRPC's write quota, the peer's window) holds the
	// writer back when the server reads slowly, so the changes gather
	// meanwhile. No clock is involved. A transport that takes every
	// request at once (an in-memory one) gets more, smaller requests: the
	// writer's pace is then the only bound.
	for {
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return
		}
		for {
			s.cfg.Lock.Lock()
			if s.ended {
				s.cfg.Lock.Unlock()
				return
			}
			req, typeURL := s.nextMessageLocked()
			unbuilt := s.unbuilt
			s.unbuilt = Names{}
			s.cfg.Lock.Unlock()
			if req == nil {
				break
			}
			var list []string
			if unbuilt.Changed() {
				list = unbuilt.List()
				req.(*discoverypb.DiscoveryRequest).ResourceNames = list
			}
			head, names, err := s.marshalRequest(req)
			if err != nil {
				s.cfg.Log.Error("xDS request marshal", "error", err)
				s.cfg.Lock.Lock()
				s.builtLocked(typeURL, unbuilt, list)
				s.cfg.Lock.Unlock()
				continue
			}
			if err := s.send(head, names); err != nil {
				// Recv reports the stream's status; nothing to add here.
				return
			}
			s.cfg.Log.Debug("xDS request sent", "server", s.cfg.Server.URI, "request", requestSummary{req})
			s.cfg.Lock.Lock()
			s.builtLocked(typeURL, unbuilt, list)
			s.onWrittenLocked(typeURL)
			s.cfg.Lock.Unlock()
		}
	}
}

// nextMessageLocked builds the next request of the stream's variant, or
// returns nil if there is none to write.
func (s *stream) nextMessageLocked() (proto.Message, string) {
	if s.delta {
		if req, typeURL := s.nextDeltaRequestLocked(); req != nil {
			return req, typeURL
		}
		return nil, ""
	}
	if req, typeURL := s.nextRequestLocked(); req != nil {
		return req, typeURL
	}
	return nil, ""
}

// listLocked builds the list of names under the lock, and hands it to
// the host if it changed.
func (s *stream) listLocked(typeURL string, names Names) []string {
	list := names.List()
	if names.Changed() {
		s.host.SubscriptionBuiltLocked(typeURL, names, list)
	}
	return list
}

// builtLocked records the list the send loop built from the changes of
// the request it just wrote (or failed to encode) as the type's last, and
// hands it to the host.
func (s *stream) builtLocked(typeURL string, names Names, list []string) {
	if !names.Changed() || s.ended {
		return
	}
	s.typeLocked(typeURL).last = list
	s.host.SubscriptionBuiltLocked(typeURL, names, list)
}

// sameSlice reports whether a and b are the same slice (the same array,
// the same length), which makes a comparison of their elements needless:
// the host hands back the very list it gave before while its
// subscriptions have not changed, so an ACK compares no names, and the
// resources of a response share one type URL slice (rawAny).
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// nextRequestLocked builds the request of the next dirty type, in type URL
// order, skipping one that would repeat the last written request exactly.
func (s *stream) nextRequestLocked() (*discoverypb.DiscoveryRequest, string) {
	for len(s.dirty) > 0 {
		typeURL := s.nextDirtyLocked()
		st := s.typeLocked(typeURL)
		if st.applying {
			// Its last part marks it dirty again.
			continue
		}
		names, version := s.host.SubscriptionLocked(typeURL)
		if s.ended {
			// Unsubscribing what nobody watches any more released the
			// server.
			return nil, ""
		}
		// list is the request's names, unless they change the list of the
		// type's last request, which the send loop then builds from the
		// changes with the lock released (unbuilt).
		var list []string
		unbuilt := false
		switch {
		case !names.Changed():
			list = names.Base
		case st.written && sameSlice(st.last, names.Base):
			unbuilt = true
		default:
			list = s.listLocked(typeURL, names)
		}
		sameNames := !unbuilt && (sameSlice(st.last, list) || slices.Equal(st.last, list))
		if st.nack == nil && st.written && st.lastVer == version && st.lastNon == st.nonce && sameNames {
			continue
		}
		if !st.written && len(list) == 0 {
			// Never subscribed on this stream and nothing to subscribe.
			continue
		}
		req := &discoverypb.DiscoveryRequest{
			VersionInfo:   version,
			ResourceNames: list,
			TypeUrl:       typeURL,
			ResponseNonce: st.nonce,
			ErrorDetail:   st.nack,
		}
		if !s.sentNode {
			req.Node = s.cfg.Node
			s.sentNode = true
		}
		st.nack = nil
		switch {
		case unbuilt:
			// st.last becomes the list once built (builtLocked).
			s.trackChangesLocked(st, names)
			s.unbuilt = names
		case !sameNames || !st.written:
			s.trackSubscriptionsLocked(st, list)
			fallthrough
		default:
			st.last = list
		}
		st.lastVer, st.lastNon, st.written = version, st.nonce, true
		return req, typeURL
	}
	return nil, ""
}
