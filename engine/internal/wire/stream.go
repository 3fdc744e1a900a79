package wire

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// stream is the core both protocol variants share: it writes each dirty
// type's request when the writer is free, reads and decodes responses,
// hands their parts to the host and answers them once applied. What
// differs (reading a response, building a request, what is answered) is
// the variant's.
type stream struct {
	cfg     Config
	host    Host
	v       variant
	ctx     context.Context
	cancel  context.CancelFunc
	stopped atomic.Bool

	// dirty are the types whose request the writer is to build; wake tells
	// it. dirtyMu guards them alone, so that Changed, called under the
	// host's lock, never waits for the stream's state.
	dirtyMu sync.Mutex
	dirty   map[string]bool
	wake    chan struct{}
	// awaits are the host's Await calls the writer has yet to take
	// (guarded by dirtyMu, for the same reason).
	awaits []awaited

	// mu guards the types' state and the timers. It is held while the
	// host is asked for a subscription or told of a timeout, so that names
	// written and answers settling them are recorded in one order; the
	// host never takes it.
	mu       sync.Mutex
	sentNode bool
	types    map[string]*typeState
	holds    holds
	// replace: a request could not be written on this stream (see
	// ErrNewStream); the writer ends it.
	replace bool
	// stopQuiet stops the quiet timer (quiet.go), nil when none runs.
	stopQuiet func() bool
	// seed hashes responses, to tell a repeated one (quiet.go).
	seed maphash.Seed

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
	// subs are the last request's names with their does-not-exist timers;
	// unsettled counts those whose timer may still run.
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
	// (subscribe): a burst of 1,000 watches makes a few allocations, not
	// 1,000. A batch lives while one of its subscriptions does.
	spare []subscription
	// forget are names unsubscribed since the last response, which the
	// receiving goroutine drops from the decode memo.
	forget []string
	// named: a request of this type on this stream has named resources,
	// not only the wildcard (see the sotw variant).
	named bool
	// asking: the request being written subscribes to names; unanswered:
	// one written since the last response of the type did (quiet.go).
	asking, unanswered bool
	// clean: the last response was applied without a failure, and no
	// subscription changed since; version is its version and sum its hash
	// (incremental); repeats counts the responses that repeated it on
	// this stream (quiet.go).
	clean   bool
	version string
	sum     uint64
	repeats int
	// changes counts the requests that changed the subscription.
	changes uint64
}

// answer is how an incremental response is answered: its nonce, and the
// NACK's error_detail or nil for an ACK.
type answer struct {
	nonce string
	nack  *rpcstatus.Status
}

// variant is what differs between State of the World and incremental xDS.
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
// has its own version, a type's first request lists the cached versions
// (initial_resource_versions), deletions are explicit (removed_resources)
// for every type, and each response is answered on its own. Timers, flow
// control, NACK rules and the host's view are the same.
func NewDelta(cfg Config) Stream { return start(cfg, delta{}) }

func start(cfg Config, v variant) *stream {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{cfg: cfg, host: cfg.Host, v: v, ctx: ctx, cancel: cancel, seed: maphash.MakeSeed(),
		dirty: make(map[string]bool), wake: make(chan struct{}, 1), types: make(map[string]*typeState),
		decodeOpts: cfg.DecodeOptions}
	// The bytes a decoder gets are its to keep: decodeOne clones them out
	// of the response.
	s.decodeOpts.OwnsRaw = true
	cfg.Goroutines.Add(1)
	go s.run()
	return s
}

func (s *stream) Changed(typeURL string) {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	if s.dirty[typeURL] {
		return // the writer has yet to take it: a burst marks it once
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
	if s.stopQuiet != nil {
		s.stopQuiet()
		s.stopQuiet = nil
	}
	for _, st := range s.types {
		for _, sub := range st.subs {
			sub.stop(st)
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
	raw, err := s.host.Open(s.ctx)
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
		// Nothing kept points into b (decodeOne copies what a decoder
		// keeps): the transport may read a later response into it.
		if r, ok := s.raw.(transport.Recycler); ok {
			r.Recycle(b)
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

// handle decodes one response and hands it to the host part by part; it
// reports false if the stream ended meanwhile. The gate is armed once
// every part is applied: the hold pausing the does-not-exist timers then
// lasts while watchers have yet to call done.
func (s *stream) handle(b []byte, gate *Gate) bool {
	s.sawResponse = true
	d, err := s.v.read(s, b)
	if err != nil {
		s.unreadable(b, err, gate)
		return !s.stopped.Load()
	}
	d.resp.Gate = gate
	if d.typ == nil {
		s.cfg.Log.Warn("xDS response for an unregistered type; ignored", "server", s.cfg.DecodeOptions.Server.URI, "type", d.resp.TypeURL)
		s.host.Apply(Part{Response: d.resp, First: true, Last: true})
		gate.arm()
		return !s.stopped.Load()
	}
	if d.resp.Repeat {
		s.applyRepeat(d, gate)
		return !s.stopped.Load()
	}
	defer d.end()
	typeURL := d.resp.TypeURL
	s.mu.Lock()
	st := s.typeLocked(typeURL)
	st.applying = true
	st.unanswered = false
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
		s.cfg.Log.Warn("xDS response NACKed", "server", s.cfg.DecodeOptions.Server.URI, "type", d.typ.ShortName(), "version", d.resp.Version, "errors", nack.GetMessage())
	}
	s.mu.Lock()
	st.applying = false
	// A later response the same as this one, with no subscription
	// changed in between, is a repeat (quiet.go).
	st.clean, st.version, st.sum = nack == nil && st.changes == d.changes, d.resp.Version, d.sum
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
// type (registered) and nonce can be read, it is NACKed once applied, and
// the awaited resources' timers stop as on any response (they may have
// been in it); nothing is dropped or deleted: what it held is unknown.
func (s *stream) unreadable(b []byte, perr error, gate *Gate) {
	typeURL, nonce, ok := peekTypeAndNonce(b)
	resp := &Response{TypeURL: typeURL, Unreadable: perr, Received: s.cfg.Clock.Now(), Gate: gate}
	typ, known := s.cfg.Names.Type(typeURL)
	if !ok || !known {
		s.cfg.Log.Warn("xDS response does not parse and names no known type; ignored", "server", s.cfg.DecodeOptions.Server.URI, "type", typeURL, "bytes", len(b), "error", perr)
		s.host.Apply(Part{Response: resp, First: true, Last: true})
		gate.arm()
		return
	}
	resp.Type = typ
	resp.Unreadable = fmt.Errorf("xDS response of %d bytes does not parse: %w", len(b), perr)
	nack := nackStatus(resp.Unreadable.Error())
	s.cfg.Log.Warn("xDS response NACKed", "server", s.cfg.DecodeOptions.Server.URI, "type", typ.ShortName(), "errors", nack.GetMessage())
	s.mu.Lock()
	st := s.typeLocked(typeURL)
	for _, sub := range st.subs {
		sub.stop(st)
	}
	st.applying = true
	st.unanswered, st.clean = false, false
	s.mu.Unlock()
	s.host.Apply(Part{Response: resp, First: true, Last: true})
	gate.arm()
	s.mu.Lock()
	st.applying = false
	s.v.answered(st, nonce, nack)
	s.mu.Unlock()
	s.Changed(typeURL)
}
