package wire

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// stream is the core both protocol variants share: it opens the stream,
// writes each dirty type's request when the writer is free, reads and
// decodes responses, hands their parts to the host and answers them once
// applied. What differs between State of the World and incremental xDS
// (reading a response, building a request, what is answered) is the
// variant's.
type stream struct {
	cfg     Config
	host    Host
	v       variant
	ctx     context.Context
	cancel  context.CancelFunc
	stopped atomic.Bool

	// dirty are the types whose request the writer is to build, and wake
	// tells it. Guarded by dirtyMu alone, so that Changed, which the host
	// calls under its own lock, never waits for the stream's state.
	dirtyMu sync.Mutex
	dirty   map[string]bool
	wake    chan struct{}

	// mu guards the types' state and the timers. It is held while the
	// stream asks the host for a subscription or reports a timeout, so
	// that the names a request writes and the answers that settle them
	// are recorded in one order; the host never takes it.
	mu       sync.Mutex
	sentNode bool
	types    map[string]*typeState
	holds    holds

	// Only the sending goroutine touches these:
	raw      transport.Stream
	buffers  transport.BuffersSender // raw, if it takes a message as buffers
	encNames map[string]encodedNames

	// Only the receiving goroutine touches these:
	sawResponse bool
	decodeOpts  registry.DecodeOptions
}

// typeState is a stream's state for one resource type.
type typeState struct {
	nonce string            // of the last response; per stream
	nack  *rpcstatus.Status // SotW: error_detail for the next request
	// answers are the incremental responses applied and not answered
	// yet, oldest first: each is answered by a request of its own.
	answers []answer
	// subs are the names of the last request written, with their
	// does-not-exist timers; unsettled counts those whose timer may
	// still run.
	subs      map[string]*subscription
	unsettled int
	// last is the names of the last request written; lastVer and lastNon
	// its version and nonce, to skip exact repeats.
	last             []string
	lastVer, lastNon string
	written          bool
	// applying: a response of this type is being applied in parts; no
	// request of the type is written meanwhile, since it would carry the
	// new nonce and the old version (a NACK the server never got).
	applying bool
	// fresh are the subscriptions new in the request being written, whose
	// timers start once it is, for timeout.
	fresh   []freshSub
	timeout time.Duration
	// spare are subscriptions allocated together, handed out one by one
	// (subscribe): a burst of 1,000 watches makes a few allocations for
	// its subscriptions, not 1,000. A batch lives while one of its
	// subscriptions does.
	spare []subscription
	// forget are names unsubscribed since the last response, which the
	// receiving goroutine drops from the decode memo.
	forget []string
}

// answer is how an incremental response is answered: its nonce, and the
// NACK's error_detail or nil for an ACK.
type answer struct {
	nonce string
	nack  *rpcstatus.Status
}

// variant is what differs between State of the World and incremental
// xDS.
type variant interface {
	// read parses a response and starts decoding it.
	read(s *stream, b []byte) (*decoding, error)
	// request builds the type's next request from its subscription, or
	// returns nil if there is nothing to write. Called with s.mu held.
	request(s *stream, st *typeState, typeURL string, sub Subscription) proto.Message
	// answered records the answer to a response just applied. Called
	// with s.mu held.
	answered(st *typeState, nonce string, nack *rpcstatus.Status)
}

// NewSotW starts a State-of-the-World ADS stream.
func NewSotW(cfg Config) Stream { return start(cfg, sotw{}) }

// NewDelta starts an incremental (delta) ADS stream. It differs from
// [NewSotW] on the wire only: subscriptions go as changes, each resource
// carries its own version, the first request of a type says which
// versions are cached (initial_resource_versions), a deletion is
// explicit (removed_resources) for every type, and every response is
// answered on its own. Timers, flow control, NACK rules and the host's
// view are the same.
func NewDelta(cfg Config) Stream { return start(cfg, delta{}) }

func start(cfg Config, v variant) *stream {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{cfg: cfg, host: cfg.Host, v: v, ctx: ctx, cancel: cancel,
		dirty: make(map[string]bool), wake: make(chan struct{}, 1), types: make(map[string]*typeState),
		decodeOpts: registry.DecodeOptions{Server: cfg.Server, Switches: cfg.Switches, CertificateProviders: cfg.CertificateProviders, OwnsRaw: true}}
	cfg.Goroutines.Add(1)
	go s.run()
	return s
}

func (s *stream) Changed(typeURL string) {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	if s.dirty[typeURL] {
		// Marked already: the writer has yet to take it. A burst of
		// watches of one type marks it once.
		return
	}
	s.dirty[typeURL] = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) Stop() {
	s.stopped.Store(true)
	s.cancel()
}

// end ends the stream on its own account and tells the host why, unless
// the host stopped it first.
func (s *stream) end(err error) {
	if s.stopped.Swap(true) {
		return
	}
	s.cancel()
	s.stopTimers()
	s.host.Ended(err, s.sawResponse)
}

func (s *stream) stopTimers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.types {
		for _, sub := range st.subs {
			sub.stop()
		}
	}
}

func (s *stream) typeLocked(typeURL string) *typeState {
	st := s.types[typeURL]
	if st == nil {
		st = &typeState{subs: make(map[string]*subscription)}
		s.types[typeURL] = st
	}
	return st
}

func (s *stream) run() {
	defer s.cfg.Goroutines.Done()
	defer s.stopTimers()
	raw, err := s.cfg.Open(s.ctx)
	if err != nil {
		s.end(err)
		return
	}
	if s.stopped.Load() {
		return
	}
	s.raw = raw
	s.buffers, _ = raw.(transport.BuffersSender)
	s.cfg.Goroutines.Add(1)
	go s.sendLoop()
	s.recvLoop()
}

// sendLoop writes the dirty types' requests. Batching follows from it:
// each request carries everything pending when it is built, and what
// changes while it is built and written waits for the next one. A single
// watch on an idle stream is written at once; a burst of watches leaves
// in requests that grow with it, as many as the burst outlasts the
// writes, and the stream's own flow control (gRPC's write quota, the
// peer's window) holds the writer back when the server reads slowly. No
// clock is involved.
func (s *stream) sendLoop() {
	defer s.cfg.Goroutines.Done()
	for {
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return
		}
		for typeURL, ok := s.takeDirty(); ok; typeURL, ok = s.takeDirty() {
			msg := s.build(typeURL)
			if s.stopped.Load() {
				return
			}
			if msg == nil {
				continue
			}
			head, names, err := s.marshalRequest(msg)
			if err != nil {
				s.cfg.Log.Error("xDS request marshal", "error", err)
				continue
			}
			if err := s.send(head, names); err != nil {
				// Recv reports the stream's status; nothing to add here.
				return
			}
			s.cfg.Log.Debug("xDS request sent", "server", s.cfg.Server.URI, "request", requestSummary{msg})
			s.mu.Lock()
			s.startTimersLocked(typeURL, s.typeLocked(typeURL))
			s.mu.Unlock()
		}
	}
}

// takeDirty takes the first dirty type, in type URL order.
func (s *stream) takeDirty() (string, bool) {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	if len(s.dirty) == 0 {
		return "", false
	}
	first := ""
	for t := range s.dirty {
		if first == "" || t < first {
			first = t
		}
	}
	delete(s.dirty, first)
	return first, true
}

// build asks the host for the type's subscription and builds the request
// the variant makes of it, or returns nil.
func (s *stream) build(typeURL string) proto.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.typeLocked(typeURL)
	if st.applying {
		// Its last part marks it dirty again.
		return nil
	}
	sub := s.host.Subscription(typeURL)
	if s.stopped.Load() {
		// Unsubscribing what nobody watches any more released the server.
		return nil
	}
	msg := s.v.request(s, st, typeURL, sub)
	if msg != nil && !s.sentNode {
		setNode(msg, s.cfg.Node)
		s.sentNode = true
	}
	return msg
}

// trackLocked records a subscription as written: new names get a
// subscription whose timer starts once the request is written, and
// removed names lose theirs. Recording before the write matters: a
// response may be processed before the writer learns its write is done.
func (s *stream) trackLocked(st *typeState, sub Subscription) {
	for _, name := range sub.Removed {
		st.unsubscribe(name)
		st.forget = append(st.forget, name)
	}
	st.fresh = st.fresh[:0]
	st.timeout = sub.Timeout
	if n := len(sub.Added); n > len(st.spare) {
		st.spare = make([]subscription, n)
		// A burst of watches adds most of its names at once: the map is
		// sized for them, rather than grown step by step.
		if want := len(st.subs) + n; want > 2*len(st.subs)+64 {
			grown := make(map[string]*subscription, want)
			maps.Copy(grown, st.subs)
			st.subs = grown
		}
	}
	awaited := sub.Awaited
	for _, name := range sub.Added {
		wait := len(awaited) > 0 && awaited[0] == name
		if wait {
			awaited = awaited[1:]
		}
		st.subscribe(name, wait)
	}
	st.last = sub.Names
}

// recvLoop reads, decodes and applies responses one at a time, each once
// every watcher of the last has called done (gRFC A88's flow control).
func (s *stream) recvLoop() {
	for {
		b, err := s.raw.Recv()
		if err != nil {
			s.end(err)
			return
		}
		gate := NewGate(s.cfg.Clock)
		s.mu.Lock()
		s.holdLocked(gate)
		s.mu.Unlock()
		if !s.handle(b, gate) {
			return
		}
		if err := s.waitForWatchers(gate); err != nil {
			s.end(errors.Join(context.Cause(s.ctx), err))
			return
		}
		s.mu.Lock()
		s.unholdLocked()
		s.mu.Unlock()
	}
}

// handle takes one response through decoding and hands it to the host,
// part by part; it reports false if the stream ended meanwhile. The
// response's gate is armed once every part is applied: the hold that
// pauses the does-not-exist timers then lasts while watchers have yet to
// call done.
func (s *stream) handle(b []byte, gate *Gate) bool {
	s.sawResponse = true
	d, err := s.v.read(s, b)
	if err != nil {
		s.unreadable(b, err, gate)
		return !s.stopped.Load()
	}
	d.resp.Gate = gate
	if d.typ == nil {
		s.cfg.Log.Warn("xDS response for an unregistered type; ignored", "server", s.cfg.Server.URI, "type", d.resp.TypeURL)
		s.host.Apply(Part{Response: d.resp, First: true, Last: true})
		gate.arm()
		return !s.stopped.Load()
	}
	defer d.end()
	typeURL := d.resp.TypeURL
	s.mu.Lock()
	st := s.typeLocked(typeURL)
	st.applying = true
	s.mu.Unlock()
	for first := true; ; first = false {
		part, last := d.nextPart()
		s.mu.Lock()
		s.settleLocked(st, part, d, last)
		s.mu.Unlock()
		s.host.Apply(Part{Response: d.resp, Resources: part, First: first, Last: last})
		if s.stopped.Load() {
			// Not finished and not answered: the server gets neither.
			return false
		}
		if last {
			break
		}
	}
	gate.arm()
	nack := d.t.nackDetail()
	if nack != nil {
		s.cfg.Log.Warn("xDS response NACKed", "server", s.cfg.Server.URI, "type", d.typ.ShortName(), "version", d.resp.Version, "errors", nack.GetMessage())
	}
	s.mu.Lock()
	st.applying = false
	s.v.answered(st, d.nonce, nack)
	s.mu.Unlock()
	s.Changed(typeURL)
	return true
}

// settleLocked stops the timers of the names a part answers: its
// resources, and with the last part the TP3 entries and removals.
func (s *stream) settleLocked(st *typeState, part []Resource, d *decoding, last bool) {
	if st.unsettled == 0 {
		return
	}
	for i := range part {
		st.settle(part[i].Key)
	}
	if last {
		for _, re := range d.resp.Errors {
			st.settle(re.Key)
		}
		for _, key := range d.resp.Removed {
			st.settle(key)
		}
	}
}

// unreadable answers a response whose envelope does not parse. If its
// type and nonce can still be read and the type is registered, it is
// NACKed once the host has applied it, and the awaited resources' timers
// stop, as on any response (they may well have been in it); nothing is
// dropped or deleted, since what it held is unknown.
func (s *stream) unreadable(b []byte, perr error, gate *Gate) {
	typeURL, nonce, ok := peekTypeAndNonce(b)
	resp := &Response{TypeURL: typeURL, Unreadable: perr, Received: s.cfg.Clock.Now(), Gate: gate}
	typ, known := s.cfg.Types(typeURL)
	if !ok || !known {
		s.cfg.Log.Warn("xDS response does not parse and names no known type; ignored", "server", s.cfg.Server.URI, "type", typeURL, "bytes", len(b), "error", perr)
		s.host.Apply(Part{Response: resp, First: true, Last: true})
		gate.arm()
		return
	}
	resp.Type = typ
	resp.Unreadable = fmt.Errorf("xDS response of %d bytes does not parse: %w", len(b), perr)
	nack := nackStatus(resp.Unreadable.Error())
	s.cfg.Log.Warn("xDS response NACKed", "server", s.cfg.Server.URI, "type", typ.ShortName(), "errors", nack.GetMessage())
	s.mu.Lock()
	st := s.typeLocked(typeURL)
	for _, sub := range st.subs {
		sub.stop()
	}
	st.applying = true
	s.mu.Unlock()
	s.host.Apply(Part{Response: resp, First: true, Last: true})
	gate.arm()
	s.mu.Lock()
	st.applying = false
	s.v.answered(st, nonce, nack)
	s.mu.Unlock()
	s.Changed(typeURL)
}

// sameSlice reports whether a and b are the same slice (the same array,
// the same length), which makes a comparison of their elements needless.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
