package wire

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// What a server says when it has nothing new to say: the same response
// again, or nothing at all.
//
// Some servers answer every ACK with the response it acknowledged
// (go-control-plane's SnapshotCache does, for a subscription it cannot
// satisfy): a loop as fast as the network. Such a repeat is recognised
// before anything is decoded, handed to the host as a Repeat (counted,
// not applied) and ACKed; the stream logs the first. A State-of-the-World
// response is a repeat when it has the last one's version and every
// resource of it has, at its index, the bytes the decode memo kept of
// the last one (a comparison made only when the version is the same, so
// that a push costs nothing more); an incremental one, when its hash is
// the last one's (its responses hold what changed, and are small).
//
// A server with nothing new to send sends nothing: an incremental one
// whose initial_resource_versions are current, or one whose resources
// the stream already holds (go-control-plane's LinearCache answers a
// subscription change that adds nothing so). Once a request that
// subscribed to names has gone unanswered for Config.QuietWindow, and
// the stream is still open, the host is told (Host.Quiet): a server
// that refuses a stream ends it, and one that cannot be reached never
// lets it open.

// repeatable reports whether the next response of typeURL may repeat the
// last one, whose version and hash (incremental) it returns: that one was applied without a
// failure and answered by an ACK, and no subscription changed since. It
// also returns the count of the type's subscription changes (see
// handle). Called by the receiving goroutine.
func (s *stream) repeatable(typeURL string) (ok bool, version string, sum, changes uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.typeLocked(typeURL)
	return st.clean && st.nack == nil && len(st.answers) == 0, st.version, st.sum, st.changes
}

// repeatsMemo reports whether a SotW response's candidates are, one for
// one, the last response's resources as the memo kept them.
func repeatsMemo(tm *typeMemo, cands []candidate, errs int) bool {
	if errs > 0 || len(cands) != len(tm.byIndex) {
		return false
	}
	for i := range cands {
		if c := &cands[i]; c.Err != nil || !tm.byIndex[i].matches(c) {
			return false
		}
	}
	return true
}

// applyRepeat hands the host a repeated response, which it only counts,
// and answers it with an ACK.
func (s *stream) applyRepeat(d *decoding, gate *Gate) {
	typeURL := d.resp.TypeURL
	s.mu.Lock()
	st := s.typeLocked(typeURL)
	st.unanswered = false
	st.applying = true
	st.repeats++
	first := st.repeats == 1
	s.mu.Unlock()
	if first {
		s.cfg.Log.Warn("xDS server answered an ACK with the response it acknowledged; repeats are ACKed and not applied (counted in xdsengine.xds_client.repeated_responses)",
			"server", s.cfg.DecodeOptions.Server.URI, "type", d.typ.ShortName(), "version", d.resp.Version)
	}
	s.host.Apply(Part{Response: d.resp, First: true, Last: true})
	gate.arm()
	s.mu.Lock()
	st.applying = false
	s.v.answered(st, d.nonce, nil)
	s.mu.Unlock()
	s.Changed(typeURL)
}

// sumDelta hashes what an incremental response says: its version, each
// resource with its name and version, its removals and errors; not its
// nonce.
func (s *stream) sumDelta(m *discoverypb.DeltaDiscoveryResponse, removed []string) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	writeString(&h, m.GetSystemVersionInfo())
	for _, r := range m.GetResources() {
		writeString(&h, r.GetName())
		writeString(&h, r.GetResourceName().GetName())
		writeString(&h, r.GetVersion())
		writeString(&h, r.GetResource().GetTypeUrl())
		writeBytes(&h, r.GetResource().GetValue())
		writeUint(&h, uint64(r.GetTtl().GetSeconds()))
		writeUint(&h, uint64(r.GetTtl().GetNanos()))
	}
	for _, name := range removed {
		writeString(&h, name)
	}
	sumErrors(&h, m.GetResourceErrors())
	return h.Sum64()
}

func sumErrors(h *maphash.Hash, errs []*discoverypb.ResourceError) {
	for _, re := range errs {
		writeString(h, re.GetResourceName().GetName())
		writeUint(h, uint64(re.GetErrorDetail().GetCode()))
		writeString(h, re.GetErrorDetail().GetMessage())
	}
}

// writeBytes and writeString write a length before the bytes, so that
// ("ab", "c") and ("a", "bc") hash apart.
func writeBytes(h *maphash.Hash, b []byte) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
	h.Write(b)
}

func writeUint(h *maphash.Hash, u uint64) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], u)])
}

func writeString(h *maphash.Hash, str string) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(str)))])
	h.WriteString(str)
}

// askedLocked records that a request that subscribed to names was just
// written, and (re)starts the quiet timer: the window runs from the last
// such request.
func (s *stream) askedLocked(st *typeState) {
	if !st.asking {
		return
	}
	st.asking, st.unanswered = false, true
	if s.cfg.QuietWindow <= 0 || s.stopped.Load() {
		return
	}
	if s.stopQuiet != nil {
		s.stopQuiet()
	}
	s.stopQuiet = s.cfg.Clock.AfterFunc(s.cfg.QuietWindow, s.onQuiet)
}

// onQuiet tells the host of the types whose requests went unanswered
// for the window. While a response is held by its watchers, the next
// may be waiting unread: the window starts again once the hold ends.
func (s *stream) onQuiet() {
	s.mu.Lock()
	if s.stopped.Load() {
		s.mu.Unlock()
		return
	}
	s.stopQuiet = nil
	if g := s.holds.gate; g != nil && !g.isOpen() {
		s.stopQuiet = s.cfg.Clock.AfterFunc(s.cfg.QuietWindow, s.onQuiet)
		s.mu.Unlock()
		return
	}
	var quiet []string
	for typeURL, st := range s.types {
		if st.unanswered {
			st.unanswered = false
			quiet = append(quiet, typeURL)
		}
	}
	s.mu.Unlock()
	if len(quiet) == 0 || s.stopped.Load() {
		return
	}
	slices.Sort(quiet)
	s.host.Quiet(quiet)
}

// awaited is one Await call the writer has yet to take.
type awaited struct {
	typeURL string
	names   []string
	timeout time.Duration
}

func (s *stream) Await(typeURL string, names []string, timeout time.Duration) {
	if len(names) == 0 {
		return
	}
	s.dirtyMu.Lock()
	s.awaits = append(s.awaits, awaited{typeURL, names, timeout})
	s.dirtyMu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// startAwaits starts the timers of the Await calls made since the last
// time: one group per call, from now. A name not written on this stream
// is left out: the host hands it as awaited when it is written.
func (s *stream) startAwaits() {
	s.dirtyMu.Lock()
	awaits := s.awaits
	s.awaits = nil
	s.dirtyMu.Unlock()
	if len(awaits) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range awaits {
		st := s.types[a.typeURL]
		if st == nil || s.stopped.Load() {
			continue
		}
		g := &timerGroup{typeURL: a.typeURL, start: s.cfg.Clock.Now(), timeout: a.timeout, heldAtStart: s.heldLocked()}
		for _, name := range a.names {
			sub := st.subs[name]
			if sub == nil || sub.timer != nil {
				continue
			}
			if sub.settled {
				sub.settled = false
				st.unsettled++
			}
			sub.awaited = true
			sub.timer = g
			g.running++
			g.members = append(g.members, freshSub{name, sub})
		}
		if g.running > 0 {
			s.startTimerLocked(g, g.timeout)
		}
	}
}
