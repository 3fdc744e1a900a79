package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

// adsStream is one SotW ADS stream attempt on a channel. Requests are
// built from the engine's state when they are written, not when the state
// changes, so a burst of watches of one type becomes one request.
type adsStream struct {
	c      *channel
	ctx    context.Context
	cancel context.CancelFunc
	stream Stream // set once open

	// Guarded by the engine's lock:
	started      bool // stream open, requests may be written
	ended        bool
	sentNode     bool
	seenResponse bool
	types        map[string]*streamType
	dirty        map[string]bool
	wake         chan struct{}
	// subChanges counts subscription changes, so the writer can tell a
	// burst of watches still under way from a single ACK.
	subChanges atomic.Uint64
	builtAt    uint64

	// From the receipt of a response until every watcher has called done,
	// the stream is held: nothing more is read, so its does-not-exist
	// timers must not run down (A27: the timer stops on receipt, and the
	// next resources may be waiting, unread, behind the held one).
	// hold is the gate of the response being delivered, nil between
	// responses; the hold ends when the gate opens, whenever this
	// goroutine gets round to noticing.
	hold      *readGate
	holdStart time.Time
	heldSum   time.Duration // earlier holds
	// deferred are timers that expired during a hold.
	deferred []deferredTimer
}

type deferredTimer struct {
	typeURL, name string
	sub           *subscription
}

// streamType is a stream's state for one resource type.
type streamType struct {
	nonce string            // of the last response; per stream
	nack  *rpcstatus.Status // error_detail for the next request
	// subs are the names of the last request written, with their
	// does-not-exist timers.
	subs map[string]*subscription
	// last is what the last written request said, to skip exact repeats.
	last    []string
	lastVer string
	lastNon string
	written bool
}

// subscription is one name on one stream. Its timer runs from the first
// write of the name on this stream until the resource (or a TP3 error for
// it) arrives, and only if nothing is cached (A57, A88).
type subscription struct {
	timerStop func() bool
	settled   bool // seen, expired or cached when first written
	// The timer ran from start for timeout, plus the time the stream was
	// held since (its held time was heldAtStart at the start).
	start       time.Time
	timeout     time.Duration
	heldAtStart time.Duration
}

func (s *adsStream) typeLocked(typeURL string) *streamType {
	st := s.types[typeURL]
	if st == nil {
		st = &streamType{subs: make(map[string]*subscription)}
		s.types[typeURL] = st
	}
	return st
}

// markDirtyLocked asks the writer to send the type's current state.
func (s *adsStream) markDirtyLocked(typeURL string) {
	if s.ended {
		return
	}
	s.dirty[typeURL] = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// endLocked stops the stream and its timers; idempotent.
func (s *adsStream) endLocked() {
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

func (s *adsStream) run() {
	e := s.c.e
	defer e.streamsRun.Done()
	var (
		st  Stream
		err error
	)
	if s.c.transport == nil {
		err = s.c.buildErr
	} else {
		st, err = s.c.transport.NewStream(s.ctx, ADSMethod)
	}
	e.mu.Lock()
	if err != nil {
		s.c.onStreamEndLocked(s, err)
		e.mu.Unlock()
		return
	}
	if s.ended {
		e.mu.Unlock()
		return
	}
	s.stream = st
	s.started = true
	for _, t := range s.c.subscribedTypesLocked() {
		s.markDirtyLocked(t)
	}
	e.streamsRun.Add(1)
	e.mu.Unlock()
	go s.sendLoop()
	s.recvLoop()
}

func (s *adsStream) sendLoop() {
	e := s.c.e
	defer e.streamsRun.Done()
	for {
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return
		}
		for {
			s.settle()
			e.mu.Lock()
			if s.ended {
				e.mu.Unlock()
				return
			}
			req := s.nextRequestLocked()
			e.mu.Unlock()
			if req == nil {
				break
			}
			b, err := proto.Marshal(req)
			if err != nil {
				e.log.Error("xDS request marshal", "error", err)
				continue
			}
			if err := s.stream.Send(b); err != nil {
				// Recv reports the stream's status; nothing to add here.
				return
			}
			e.log.Debug("xDS request sent", "server", s.c.server.URI, "type", req.GetTypeUrl(), "version", req.GetVersionInfo(),
				"nonce", req.GetResponseNonce(), "names", len(req.GetResourceNames()), "nack", req.GetErrorDetail() != nil)
			e.mu.Lock()
			s.onWrittenLocked(req)
			e.mu.Unlock()
		}
	}
}

// settle lets a burst of subscription changes (many watches registered
// in a loop) finish before a request is built, so that the burst leaves
// in a few requests per type instead of one per watch: each request of a
// SotW stream makes the server send every subscribed resource again, so
// a burst sent piecemeal costs the server, and this client, the square of
// its size. It waits until the subscriptions have not changed for a quiet
// period, at most about a second; a single watch waits one quiet period,
// and an ACK, which changes no subscription, is not delayed. A response
// being applied holds the engine's lock, so Watch calls cannot change
// anything meanwhile: that is no quiet, and does not count. It sleeps
// rather than spins, leaving the CPU to the goroutine registering the
// watches.
func (s *adsStream) settle() {
	const (
		quiet = 250 * time.Microsecond
		limit = time.Second
	)
	e := s.c.e
	last := s.subChanges.Load()
	if last == s.builtAt {
		return
	}
	lastApply := e.applying.Load()
	// Stalls do not count, but a server whose responses never stop must
	// not hold subscriptions back for ever either.
	deadline := time.Now().Add(10 * limit)
	for waited := time.Duration(0); waited < limit && time.Now().Before(deadline); {
		time.Sleep(quiet)
		n, apply := s.subChanges.Load(), e.applying.Load()
		stalled := apply != lastApply || apply%2 == 1
		if n == last && !stalled {
			break
		}
		if !stalled {
			waited += quiet
		}
		last, lastApply = n, apply
	}
	s.builtAt = s.subChanges.Load()
}

// nextRequestLocked builds the request of the next dirty type, in type URL
// order, skipping one that would repeat the last written request exactly.
func (s *adsStream) nextRequestLocked() *discoverypb.DiscoveryRequest {
	for len(s.dirty) > 0 {
		types := make([]string, 0, len(s.dirty))
		for t := range s.dirty {
			types = append(types, t)
		}
		slices.Sort(types)
		typeURL := types[0]
		delete(s.dirty, typeURL)
		st := s.typeLocked(typeURL)
		names := s.c.subscriptionsLocked(typeURL)
		if s.ended {
			return nil
		}
		version := s.c.versions[typeURL]
		if st.nack == nil && st.written && st.lastVer == version && st.lastNon == st.nonce && slices.Equal(st.last, names) {
			continue
		}
		if !st.written && len(names) == 0 {
			// Never subscribed on this stream and nothing to subscribe.
			continue
		}
		req := &discoverypb.DiscoveryRequest{
			VersionInfo:   version,
			ResourceNames: names,
			TypeUrl:       typeURL,
			ResponseNonce: st.nonce,
			ErrorDetail:   st.nack,
		}
		if !s.sentNode {
			req.Node = s.c.e.node
			s.sentNode = true
		}
		st.nack = nil
		st.last, st.lastVer, st.lastNon, st.written = names, version, st.nonce, true
		s.trackSubscriptionsLocked(st, names)
		return req
	}
	return nil
}

// trackSubscriptionsLocked records the names of a request being built:
// new names get a subscription whose timer starts once the request is
// written, names left out lose theirs. Recording before the write matters:
// a response may be processed before the writer learns its write is done.
func (s *adsStream) trackSubscriptionsLocked(st *streamType, names []string) {
	for name, sub := range st.subs {
		if _, still := slices.BinarySearch(names, name); !still {
			sub.stopLocked()
			delete(st.subs, name)
		}
	}
	for _, name := range names {
		if _, ok := st.subs[name]; !ok {
			st.subs[name] = &subscription{}
		}
	}
}

// onWrittenLocked starts the does-not-exist timer of each name written for
// the first time on this stream whose resource is neither cached nor
// already settled by a response.
func (s *adsStream) onWrittenLocked(req *discoverypb.DiscoveryRequest) {
	if s.ended {
		return
	}
	e := s.c.e
	typeURL := req.GetTypeUrl()
	st := s.typeLocked(typeURL)
	for _, name := range req.GetResourceNames() {
		sub := st.subs[name]
		if sub == nil || sub.settled || sub.timerStop != nil {
			continue
		}
		if _, en := e.lookupEntryLocked(typeURL, name); en == nil || en.value != nil {
			sub.settled = true
			continue
		}
		t := s.c.timerLocked()
		sub.start, sub.timeout, sub.heldAtStart = e.clock.Now(), t.Timeout, s.heldLocked()
		sub.timerStop = e.clock.AfterFunc(t.Timeout, func() { s.onTimer(typeURL, name, sub) })
	}
}

func (s *adsStream) onTimer(typeURL, name string, sub *subscription) {
	e := s.c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.ended || sub.settled || s.types[typeURL].subs[name] != sub {
		return
	}
	sub.timerStop = nil
	if s.hold != nil && !s.hold.isOpen() {
		s.deferred = append(s.deferred, deferredTimer{typeURL, name, sub})
		return
	}
	s.expireOrExtendLocked(typeURL, name, sub)
}

// expireOrExtendLocked ends a timer that ran its length: the time the
// stream was held meanwhile does not count, so the timer is extended by
// it; once none is left, the resource is declared missing.
func (s *adsStream) expireOrExtendLocked(typeURL, name string, sub *subscription) {
	e := s.c.e
	deadline := sub.start.Add(sub.timeout + s.heldLocked() - sub.heldAtStart)
	if left := deadline.Sub(e.clock.Now()); left > 0 {
		sub.timerStop = e.clock.AfterFunc(left, func() { s.onTimer(typeURL, name, sub) })
		return
	}
	sub.settled = true
	if _, en := e.lookupEntryLocked(typeURL, name); en != nil {
		e.onTimerLocked(en, s.c)
	}
}

// heldLocked is the total time the stream has been held so far.
func (s *adsStream) heldLocked() time.Duration {
	if s.hold == nil {
		return s.heldSum
	}
	end, open := s.hold.openedAt()
	if !open {
		end = s.c.e.clock.Now()
	}
	return s.heldSum + end.Sub(s.holdStart)
}

// holdLocked starts a hold, from the receipt of a response until its gate
// opens.
func (s *adsStream) holdLocked(g *readGate) {
	s.hold = g
	s.holdStart = s.c.e.clock.Now()
}

// unholdLocked ends a hold whose gate has opened; timers that expired
// during it get the time it took back.
func (s *adsStream) unholdLocked() {
	if s.hold == nil {
		return
	}
	s.heldSum = s.heldLocked()
	s.hold = nil
	deferred := s.deferred
	s.deferred = nil
	for _, d := range deferred {
		if !s.ended && !d.sub.settled && s.types[d.typeURL].subs[d.name] == d.sub {
			s.expireOrExtendLocked(d.typeURL, d.name, d.sub)
		}
	}
}

// settleLocked stops a name's timer: the resource, or an error for it,
// arrived on this stream.
func (s *adsStream) settleLocked(typeURL, name string) {
	st := s.types[typeURL]
	if st == nil {
		return
	}
	if sub := st.subs[name]; sub != nil {
		sub.stopLocked()
	}
}

// stopLocked settles the subscription: its timer will not fire.
func (sub *subscription) stopLocked() {
	sub.settled = true
	if sub.timerStop != nil {
		sub.timerStop()
		sub.timerStop = nil
	}
}

func (s *adsStream) recvLoop() {
	e := s.c.e
	for {
		b, err := s.stream.Recv()
		if err == nil && len(b) > e.maxResponseBytes {
			// A transport that does not enforce the limit itself.
			err = &ResponseTooLargeError{Size: len(b), Limit: e.maxResponseBytes}
		}
		if err != nil {
			e.mu.Lock()
			s.c.onStreamEndLocked(s, err)
			e.mu.Unlock()
			return
		}
		gate := newReadGate(e.clock)
		e.mu.Lock()
		if s.ended {
			e.mu.Unlock()
			return
		}
		s.holdLocked(gate)
		e.mu.Unlock()
		resp := &discoverypb.DiscoveryResponse{}
		perr := proto.Unmarshal(b, resp)
		if perr == nil {
			e.log.Debug("xDS response received", "server", s.c.server.URI, "type", resp.GetTypeUrl(), "version", resp.GetVersionInfo(),
				"nonce", resp.GetNonce(), "resources", len(resp.GetResources()), "resource_errors", len(resp.GetResourceErrors()))
		}
		typ, known := e.lookupType(resp.GetTypeUrl())
		var decoded []decodedResource
		if perr == nil && known {
			decoded = s.c.decodeResponse(typ, resp)
		}
		e.mu.Lock()
		if s.ended {
			e.mu.Unlock()
			return
		}
		switch {
		case perr != nil:
			s.c.handleUnreadableLocked(s, b, perr, gate)
		case !known:
			s.c.onResponseLocked(s)
			e.log.Warn("xDS response for an unregistered type; ignored", "server", s.c.server.URI, "type", resp.GetTypeUrl())
		default:
			e.applying.Add(1)
			s.c.applyResponseLocked(s, typ, resp, decoded, gate)
			e.applying.Add(1)
		}
		e.mu.Unlock()
		gate.arm()
		if err := s.waitForWatchers(gate); err != nil {
			e.mu.Lock()
			s.c.onStreamEndLocked(s, errors.Join(context.Cause(s.ctx), err))
			e.mu.Unlock()
			return
		}
		e.mu.Lock()
		s.unholdLocked()
		e.mu.Unlock()
	}
}

// waitForWatchers waits until every watcher notified of the last response
// has called done. A88's flow control is kept however long that takes,
// but a watcher that holds done past Config.SlowWatcherThreshold is named
// in a warning and counted, since it stops every read from this server.
func (s *adsStream) waitForWatchers(g *readGate) error {
	e := s.c.e
	var overdue chan struct{}
	if e.slowWatcherThreshold > 0 {
		overdue = make(chan struct{})
		ch := overdue
		stop := e.clock.AfterFunc(e.slowWatcherThreshold, func() { close(ch) })
		defer stop()
	}
	for {
		select {
		case <-g.open:
			return nil
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-overdue:
			overdue = nil
			s.reportSlowWatchers(g)
		}
	}
}

// reportSlowWatchers logs the resources whose watchers have not called
// done, and counts the notifications per type.
func (s *adsStream) reportSlowWatchers(g *readGate) {
	e := s.c.e
	entries := g.outstanding()
	if len(entries) == 0 {
		return
	}
	const maxNamed = 10
	var named []string
	perType := map[string]int{}
	types := map[string]registry.ResourceType{}
	for _, en := range entries {
		if len(named) < maxNamed {
			named = append(named, en.typ.ShortName()+" "+quoteName(en.name))
		}
		perType[en.typ.TypeURL]++
		types[en.typ.TypeURL] = en.typ
	}
	e.log.Warn("xDS watchers have not called done; reads from the server are held until they do",
		"server", s.c.server.URI, "after", e.slowWatcherThreshold, "notifications", g.outstandingCount(),
		"resources", len(entries), "first", strings.Join(named, ", "))
	for u, n := range perType {
		e.metrics.slowWatchers(s.c, types[u], n)
	}
}
