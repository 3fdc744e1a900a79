package wire

import (
	"time"

	"github.com/xdsengine/xdsengine/internal/xdsname"
)

// subscription is one name on one stream. Its does-not-exist timer runs
// from the first write of the name on this stream until the resource (or
// a TP3 error for it) arrives, and only if nothing is cached (A57, A88).
type subscription struct {
	owner     *streamType
	timerStop func() bool
	settled   bool // seen, expired or cached when first written
	// The timer ran from start for timeout, plus the time the stream was
	// held since (its held time was heldAtStart at the start).
	start       time.Time
	timeout     time.Duration
	heldAtStart time.Duration
}

// holds tracks the time a stream spends held: from the receipt of a
// response until every watcher has called done, nothing more is read, so
// its does-not-exist timers must not run down (A27: the timer stops on
// receipt, and the next resources may be waiting, unread, behind the held
// one).
type holds struct {
	// gate is that of the response being delivered, nil between
	// responses; the hold ends when the gate opens, whenever the reader
	// gets round to noticing.
	gate  *Gate
	start time.Time
	sum   time.Duration // earlier holds
	// deferred are timers that expired during a hold.
	deferred []deferredTimer
}

type deferredTimer struct {
	typeURL, name string
	sub           *subscription
}

// trackSubscriptionsLocked records the names of a request being built:
// new names get a subscription whose timer starts once the request is
// written, names left out lose theirs. Recording before the write matters:
// a response may be processed before the writer learns its write is done.
// Both lists are sorted, so one merge finds the difference.
func (s *stream) trackSubscriptionsLocked(st *streamType, names []string) {
	st.fresh = st.fresh[:0]
	diffSorted(st.last, names, func(name string) {
		if sub := st.subs[name]; sub != nil {
			sub.stopLocked()
			delete(st.subs, name)
		}
	}, func(name string) {
		if _, ok := st.subs[name]; !ok {
			sub := &subscription{owner: st}
			st.subs[name] = sub
			st.unsettled++
			st.fresh = append(st.fresh, freshSub{name, sub})
		}
	})
}

// diffSorted calls removed for each name of old not in cur, and added for
// each name of cur not in old. Both are sorted. Equality is tested first:
// the host builds a new list from the old one's strings, and strings that
// share their bytes compare equal without reading them.
func diffSorted(old, cur []string, removed, added func(string)) {
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		switch {
		case i < len(old) && j < len(cur) && old[i] == cur[j]:
			i++
			j++
		case j == len(cur) || (i < len(old) && old[i] < cur[j]):
			removed(old[i])
			i++
		default:
			added(cur[j])
			j++
		}
	}
}

// onWrittenLocked starts the does-not-exist timer of each name written for
// the first time on this stream whose resource is neither cached nor
// already settled by a response.
func (s *stream) onWrittenLocked(typeURL string) {
	if s.ended {
		return
	}
	st := s.typeLocked(typeURL)
	fresh := st.fresh
	st.fresh = st.fresh[:0]
	for _, f := range fresh {
		name, sub := f.name, f.sub
		if st.subs[name] != sub || sub.settled || sub.timerStop != nil {
			continue
		}
		timeout, ok := s.host.TimerLocked(typeURL, name)
		if !ok {
			sub.markSettled()
			continue
		}
		sub.start, sub.timeout, sub.heldAtStart = s.cfg.Clock.Now(), timeout, s.heldLocked()
		sub.timerStop = s.cfg.Clock.AfterFunc(timeout, func() { s.onTimer(typeURL, name, sub) })
	}
}

func (s *stream) onTimer(typeURL, name string, sub *subscription) {
	s.cfg.Lock.Lock()
	defer s.cfg.Lock.Unlock()
	if s.ended || sub.settled || s.types[typeURL].subs[name] != sub {
		return
	}
	sub.timerStop = nil
	if g := s.holds.gate; g != nil && !g.isOpen() {
		s.holds.deferred = append(s.holds.deferred, deferredTimer{typeURL, name, sub})
		return
	}
	s.expireOrExtendLocked(typeURL, name, sub)
}

// expireOrExtendLocked ends a timer that ran its length: the time the
// stream was held meanwhile does not count, so the timer is extended by
// it; once none is left, the resource is declared missing.
func (s *stream) expireOrExtendLocked(typeURL, name string, sub *subscription) {
	deadline := sub.start.Add(sub.timeout + s.heldLocked() - sub.heldAtStart)
	if left := deadline.Sub(s.cfg.Clock.Now()); left > 0 {
		sub.timerStop = s.cfg.Clock.AfterFunc(left, func() { s.onTimer(typeURL, name, sub) })
		return
	}
	sub.markSettled()
	s.host.TimeoutLocked(typeURL, name)
}

// heldLocked is the total time the stream has been held so far.
func (s *stream) heldLocked() time.Duration {
	h := &s.holds
	if h.gate == nil {
		return h.sum
	}
	end, open := h.gate.openedAt()
	if !open {
		end = s.cfg.Clock.Now()
	}
	return h.sum + end.Sub(h.start)
}

// holdLocked starts a hold, from the receipt of a response until its gate
// opens.
func (s *stream) holdLocked(g *Gate) {
	s.holds.gate = g
	s.holds.start = s.cfg.Clock.Now()
}

// unholdLocked ends a hold whose gate has opened; timers that expired
// during it get the time it took back.
func (s *stream) unholdLocked() {
	h := &s.holds
	if h.gate == nil {
		return
	}
	h.sum = s.heldLocked()
	h.gate = nil
	deferred := h.deferred
	h.deferred = nil
	for _, d := range deferred {
		if !s.ended && !d.sub.settled && s.types[d.typeURL].subs[d.name] == d.sub {
			s.expireOrExtendLocked(d.typeURL, d.name, d.sub)
		}
	}
}

// settleLocked stops a name's timer: the resource, or an error for it,
// arrived on this stream.
func (s *stream) settleLocked(typeURL, name string) {
	st := s.types[typeURL]
	if st == nil {
		return
	}
	if sub := st.subs[name]; sub != nil {
		sub.stopLocked()
		return
	}
	// A member of a glob collection answers the collection's
	// subscription (xRFC TP1).
	if glob, ok := xdsname.GlobOf(name); ok {
		if sub := st.subs[glob]; sub != nil {
			sub.stopLocked()
		}
	}
}

// stopLocked settles the subscription: its timer will not fire.
func (sub *subscription) stopLocked() {
	sub.markSettled()
	if sub.timerStop != nil {
		sub.timerStop()
		sub.timerStop = nil
	}
}

// markSettled settles the subscription, keeping its type's count of
// unsettled ones.
func (sub *subscription) markSettled() {
	if !sub.settled {
		sub.settled = true
		sub.owner.unsettled--
	}
}
