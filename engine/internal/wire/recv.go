package wire

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func (s *stream) recvLoop() {
	s.scratch = idleScratch.Get().(*scratch)
	defer func() {
		// Every response's use of it ended with its release.
		idleScratch.Put(s.scratch)
		s.scratch = nil
	}()
	for {
		b, err := s.raw.Recv()
		if err != nil {
			s.cfg.Lock.Lock()
			s.endWithLocked(err)
			s.cfg.Lock.Unlock()
			return
		}
		gate := NewGate(s.cfg.Clock)
		s.cfg.Lock.Lock()
		if s.ended {
			s.cfg.Lock.Unlock()
			return
		}
		s.holdLocked(gate)
		s.cfg.Lock.Unlock()
		if !s.handle(b, gate) {
			return
		}
		if err := s.waitForWatchers(gate); err != nil {
			s.cfg.Lock.Lock()
			s.endWithLocked(errors.Join(context.Cause(s.ctx), err))
			s.cfg.Lock.Unlock()
			return
		}
		s.cfg.Lock.Lock()
		s.unholdLocked()
		s.cfg.Lock.Unlock()
	}
}

// handle takes one response through its first two stages: decoding here,
// applying by the host. It reports false if the stream ended meanwhile.
// It arms the response's gate under the lock, as soon as every
// notification of the response is scheduled: the hold that pauses the
// does-not-exist timers then lasts while watchers have yet to call done,
// not also while this goroutine records the response (remember), which
// a watcher, and a test moving a fake clock after its delivery, does not
// wait for.
func (s *stream) handle(b []byte, gate *Gate) bool {
	s.yields = startYieldClock() // it waited in Recv
	var in incoming
	if s.delta {
		in = s.readDelta(b)
	} else {
		in = s.readSotW(b)
	}
	perr, known, decoded, t := in.err, in.known, in.decoded, in.tally
	defer s.scratch.release()
	// Before the release: the workers write to the candidates.
	defer decoded.dropPending()
	if decoded != nil {
		s.checkMore(decoded, 0, ApplyPart)
	}
	s.cfg.Lock.Lock()
	if s.ended {
		s.cfg.Lock.Unlock()
		return false
	}
	s.seenResponse = true
	s.host.ReceivedLocked()
	switch {
	case perr != nil:
		s.unreadableLocked(b, perr, gate)
	case !known:
		s.cfg.Log.Warn("xDS response for an unregistered type; ignored", "server", s.cfg.Server.URI, "type", in.typeURL)
	default:
		ok := s.applyLocked(in.nonce, decoded, t, gate)
		if ok {
			gate.arm()
		}
		s.cfg.Lock.Unlock()
		if ok && !s.delta {
			// Outside the lock: it is the receiving goroutine's alone,
			// and takes a pass over the whole response.
			s.remember(decoded.Type.TypeURL, decoded)
		}
		return ok
	}
	gate.arm()
	s.cfg.Lock.Unlock()
	return true
}

// incoming is a response read and, when it parsed and its type is
// registered, decoded (stage 1).
type incoming struct {
	typeURL, nonce string
	err            error // the envelope did not parse
	known          bool  // its type is registered
	decoded        *Response
	tally          *tally
}

// readSotW parses and decodes a DiscoveryResponse.
func (s *stream) readSotW(b []byte) incoming {
	env, err := parseEnvelope(b, s.scratch.envelopeArray())
	if err != nil {
		// proto.Unmarshal says why, in the words NACKs have always used.
		resp := &discoverypb.DiscoveryResponse{}
		if err := proto.Unmarshal(b, resp); err != nil {
			return incoming{err: err, typeURL: resp.GetTypeUrl(), nonce: resp.GetNonce()}
		}
		env = envelopeOf(resp)
	}
	s.cfg.Log.Debug("xDS response received", "server", s.cfg.Server.URI, "type", env.typeURL, "version", env.version,
		"nonce", env.nonce, "resources", len(env.resources), "resource_errors", len(env.errors))
	in := incoming{typeURL: env.typeURL, nonce: env.nonce}
	typ, known := s.cfg.Types(in.typeURL)
	in.known = known
	if known {
		received := s.cfg.Clock.Now()
		in.decoded, in.tally = s.decode(typ, env)
		in.decoded.Received = received
	}
	s.scratch.keepEnvelope(env.resources)
	return in
}

// applyLocked hands a decoded response to the host, part by part, and
// answers it. It reports false if the stream ended between parts: the
// rest of the response is then not applied, and not answered.
func (s *stream) applyLocked(nonce string, r *Response, t *tally, gate *Gate) bool {
	typeURL := r.Type.TypeURL
	st := s.typeLocked(typeURL)
	st.nonce = nonce
	// A request written between parts would carry the new nonce and the
	// old version: a NACK the server never got. The type waits.
	st.applying = true
	for applied := 0; ; {
		part := r.Resources[applied:min(len(r.Resources), applied+ApplyPart)]
		applied += len(part)
		// A timer that fires while the parts are applied waits for the
		// response's gate (holds), so settling part by part is in time.
		if st.unsettled > 0 {
			for _, res := range part {
				st.settleLocked(res.Key)
			}
		}
		s.host.ApplyResourcesLocked(r, part, gate)
		if applied == len(r.Resources) && r.pending == nil {
			break
		}
		s.cfg.Lock.Unlock()
		s.yieldToCallers()
		// A response still being decoded: its next part is checked
		// here, with the lock released.
		s.checkMore(r, applied, ApplyPart)
		s.cfg.Lock.Lock()
		if s.ended {
			return false
		}
	}
	st.applying = false
	for _, re := range r.Errors {
		st.settleLocked(re.Key)
	}
	for _, key := range r.Removed {
		st.settleLocked(key)
	}
	s.host.FinishLocked(r, gate)
	if st.nack = t.nackDetail(); st.nack != nil {
		s.cfg.Log.Warn("xDS response NACKed", "server", s.cfg.Server.URI, "type", r.Type.ShortName(), "version", r.Version, "errors", st.nack.GetMessage())
	}
	s.queueAnswerLocked(st)
	s.markDirtyLocked(typeURL)
	return true
}

// queueAnswerLocked records, on an incremental stream, that the response
// just handled (st.nonce, st.nack) is to be answered by a request of its
// own.
func (s *stream) queueAnswerLocked(st *streamType) {
	if s.delta {
		st.answers = append(st.answers, answer{nonce: st.nonce, nack: st.nack})
		st.nack = nil
	}
}

// yieldInterval is how long the receiving goroutine runs before it
// yields: well under the scheduler's 10 ms preemption, and about what
// one part of a response takes to apply.
const yieldInterval = 100 * time.Microsecond

// yieldIfLong gives up the processor if the receiving goroutine has run
// for yieldInterval since it last did: a goroutine woken meanwhile (a
// Watch call whose lock was just released) waits in the run queue of a
// processor until its goroutine yields. Loops over a whole response call
// it every yieldEvery resources.
func (s *stream) yieldIfLong() { s.yields.yieldIfLong() }

// yieldClock is when a goroutine that works through a response last gave
// up its processor. Each yield is a trip through the scheduler, which
// wakes an idle processor if there is one, so a goroutine yields once per
// yieldInterval rather than at each step.
type yieldClock struct{ last time.Time }

func startYieldClock() yieldClock { return yieldClock{last: time.Now()} }

func (y *yieldClock) yieldIfLong() {
	if now := time.Now(); now.Sub(y.last) >= yieldInterval {
		runtime.Gosched()
		y.last = now
	}
}

// yieldEvery is how many resources a loop over a response handles between
// calls of yieldIfLong: a few microseconds' work, and a clock read.
const yieldEvery = 128

// heldResource is what the host holds of one resource of a response:
// see Resource.Held.
type heldResource struct {
	raw  []byte
	held any
}

// lastResponse is what a stream keeps of a type's last SotW response, for
// the next one to be compared with: a server re-sends every resource,
// unchanged ones with the same bytes, and names in the same order as a
// rule.
type lastResponse struct {
	// byIndex is, for each resource, what the host held of it.
	byIndex []heldResource
	// keys are the response's keys by index ("" where a resource was not
	// applied), kept when its Named held the resources' keys and nothing
	// more (no TP3 entry); count is how many there are. A response whose
	// keys are these, index for index, names exactly the same (endKeys)
	// and need not fill a map of its own: the dearest part of checking an
	// unchanged resource, and of a large response of changed ones. named
	// is the response's Named, kept with them when the response was
	// small enough (maxScratch): a larger one's is filled again only if
	// the host asks for it (Response.NamedKeys), which it rarely does.
	keys  []string
	count int
	named map[string]bool
}

// lastResponse returns what the stream keeps of the type's last SotW
// response, empty before the first.
func (s *stream) lastResponse(typeURL string) *lastResponse {
	last := s.prev[typeURL]
	if last == nil {
		last = &lastResponse{}
		s.prev[typeURL] = last
	}
	return last
}

// remember keeps, by index, what the host holds of a SotW response's
// resources and their keys, for the next response of the type to be
// compared with (decode, addKey). Only the receiving goroutine uses it.
func (s *stream) remember(typeURL string, r *Response) {
	last := s.lastResponse(typeURL)
	n := 0
	for i := range r.Resources {
		n = max(n, int(r.Resources[i].index)+1)
	}
	prev := last.byIndex
	if cap(prev) < n {
		prev = make([]heldResource, n)
	}
	prev = prev[:n]
	// One pass over both: the resources are in index order, and the
	// indices they skip (resources that failed) hold nothing.
	j := 0
	for i := range r.Resources {
		res := &r.Resources[i]
		for ; j < int(res.index); j++ {
			prev[j] = heldResource{}
		}
		// Field by field: a struct built and then copied in is read back
		// wide from narrow stores, a stall on each resource.
		p := &prev[j]
		if res.Held != nil {
			p.raw, p.held = res.Raw, res.Held
		} else {
			p.raw, p.held = nil, nil
		}
		j++
	}
	last.byIndex = prev
	switch {
	case r.namedKept:
		// The same keys at the same indices: what was kept still holds.
	case r.Named != nil && len(r.Named) == len(r.Resources):
		// Only the resources' keys, each once: kept by index, and with
		// them, for a response small enough, the map, while the map kept
		// until now becomes the scratch map for the next response (which
		// release clears).
		keys := last.keys
		if cap(keys) < n {
			keys = make([]string, n)
		}
		keys = keys[:n]
		clear(keys)
		for i := range r.Resources {
			keys[r.Resources[i].index] = r.Resources[i].Key
		}
		last.keys, last.count = keys, len(r.Resources)
		if n <= maxScratch {
			last.named, s.scratch.named = r.Named, last.named
		} else {
			last.named = nil
		}
	default:
		last.keys, last.count, last.named = nil, 0, nil
	}
}

// yieldToCallers lets the calls waiting for the lock take it before the
// next part of a response is applied: a sync.Mutex just unlocked goes to
// whoever asks first, and that is usually the goroutine that unlocked it.
// The wait is bounded, in yields, so that calls arriving without pause
// cannot hold a response back for ever.
//
// It also yields, with the lock released, once the goroutine has run for
// yieldInterval: one that runs for 10 ms without yielding is preempted
// wherever it is, and one preempted while holding the lock keeps every
// Watch call waiting until it runs again.
func (s *stream) yieldToCallers() {
	s.yieldIfLong()
	if s.cfg.Callers == nil {
		return
	}
	for i := 0; i < 1000 && s.cfg.Callers.Load() > 0; i++ {
		runtime.Gosched()
	}
}

// unreadableLocked answers a response whose envelope does not parse. If
// its type and nonce can still be read, the response is NACKed and the
// host tells the watchers of that type why their server's updates are not
// arriving; nothing is dropped or deleted, since what the response held
// is unknown.
func (s *stream) unreadableLocked(b []byte, perr error, gate *Gate) {
	typeURL, nonce, ok := peekTypeAndNonce(b)
	u := Unreadable{TypeURL: typeURL, Err: perr}
	typ, known := s.cfg.Types(typeURL)
	if !ok || !known {
		s.cfg.Log.Warn("xDS response does not parse and names no known type; ignored", "server", s.cfg.Server.URI, "type", typeURL, "bytes", len(b), "error", perr)
		s.host.UnreadableLocked(u, gate)
		return
	}
	u.Type = &typ
	u.Err = fmt.Errorf("xDS response of %d bytes does not parse: %w", len(b), perr)
	st := s.typeLocked(typeURL)
	st.nonce = nonce
	st.nack = nackStatus(u.Err.Error())
	s.cfg.Log.Warn("xDS response NACKed", "server", s.cfg.Server.URI, "type", typ.ShortName(), "errors", st.nack.GetMessage())
	s.queueAnswerLocked(st)
	// The awaited resources may well have been in it: the timers stop, as
	// on any response, and the watchers hear of the NACK instead.
	for _, sub := range st.subs {
		sub.stopLocked()
	}
	s.host.UnreadableLocked(u, gate)
	s.markDirtyLocked(typeURL)
}

// peekTypeAndNonce reads type_url (field 4) and nonce (field 5) from the
// top level of a DiscoveryResponse that proto.Unmarshal refused, skipping
// whatever else it can. It reports whether both fields were read.
func peekTypeAndNonce(b []byte) (typeURL, nonce string, ok bool) {
	var haveType, haveNonce bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 4 || num == 5) {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				break
			}
			if num == 4 {
				typeURL, haveType = string(v), true
			} else {
				nonce, haveNonce = string(v), true
			}
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			break
		}
		b = b[m:]
	}
	// Echoed in a proto string, the nonce must be valid UTF-8.
	return typeURL, strings.ToValidUTF8(nonce, "\uFFFD"), haveType && haveNonce
}

// waitForWatchers waits until every watcher notified of the last response
// has called done. A88's flow control is kept however long that takes,
// but the host hears of notifications that hold done past
// Config.SlowWatcherThreshold, since they stop every read from this
// server.
func (s *stream) waitForWatchers(g *Gate) error {
	var overdue chan struct{}
	if s.cfg.SlowWatcherThreshold > 0 {
		overdue = make(chan struct{})
		ch := overdue
		stop := s.cfg.Clock.AfterFunc(s.cfg.SlowWatcherThreshold, func() { close(ch) })
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
			if pending, n := g.outstanding(); len(pending) > 0 {
				s.host.SlowWatchers(pending, n)
			}
		}
	}
}
