package wire

import (
	"maps"
	"slices"
	"time"

	"github.com/xdsengine/xdsengine/internal/xdsname"
)

// subscription is one name on one stream. Its does-not-exist timer runs
// from the first write of the name on this stream until the resource (or
// a TP3 error for it) arrives, and only if nothing is cached (A57, A88).
type subscription struct {
	owner   *streamType
	settled bool // seen, expired or cached when first written
	// timer is the group whose timer runs for this name, nil once it is
	// settled or if it never needed one.
	timer *timerGroup
}

// timerGroup is the does-not-exist timer of the names one request wrote
// for the first time. They start together and run for the same length,
// so one clock timer serves them all: a cold start of 1,000 watches
// starts one timer, not 1,000, and a name's resource arriving costs a
// count, not a timer's stop. The timer runs from start for timeout, plus
// the time the stream was held since (its held time was heldAtStart at
// the start).
type timerGroup struct {
	typeURL     string
	start       time.Time
	timeout     time.Duration
	heldAtStart time.Duration
	// members are the names and their subscriptions: the request's list
	// of fresh ones, taken over rather than copied.
	members []freshSub
	// running counts the subs whose timer is this group's: at zero the
	// clock timer is stopped.
	running int
	stop    func() bool
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
	deferred []*timerGroup
}

// trackSubscriptionsLocked records the names of a request being built:
// new names get a subscription whose timer starts once the request is
// written, names left out lose theirs. Recording before the write matters:
// a response may be processed before the writer learns its write is done.
// Both lists are sorted, so one merge finds the difference.
func (s *stream) trackSubscriptionsLocked(st *streamType, names []string) {
	st.prepareFreshLocked(len(names) - len(st.last))
	diffSorted(st.last, names, st.unsubscribeLocked, st.subscribeLocked)
}

// trackChangesLocked records the names of a request being built from the
// changes to the type's last request, which the names say.
func (s *stream) trackChangesLocked(st *streamType, names Names) {
	st.prepareFreshLocked(len(names.Added) - len(names.Removed))
	for _, name := range names.Removed {
		st.unsubscribeLocked(name)
	}
	for _, name := range names.Added {
		st.subscribeLocked(name)
	}
}

// prepareFreshLocked empties the list of fresh names for a request that
// adds grow names net. A burst of watches adds most of its names at once:
// the map and the list are sized for them, rather than grown step by step
// (each step rehashes or copies what is there).
func (st *streamType) prepareFreshLocked(grow int) {
	st.fresh = st.fresh[:0]
	if grow <= 0 {
		return
	}
	if want := len(st.subs) + grow; want > 2*len(st.subs)+64 {
		subs := make(map[string]*subscription, want)
		maps.Copy(subs, st.subs)
		st.subs = subs
	}
	if cap(st.fresh) < grow {
		st.fresh = make([]freshSub, 0, grow)
	}
	if len(st.spare) < grow {
		st.spare = make([]subscription, grow)
	}
}

func (st *streamType) unsubscribeLocked(name string) {
	if sub := st.subs[name]; sub != nil {
		sub.stopLocked()
		delete(st.subs, name)
	}
}

func (st *streamType) subscribeLocked(name string) {
	if _, ok := st.subs[name]; !ok {
		var sub *subscription
		if len(st.spare) > 0 {
			sub, st.spare = &st.spare[0], st.spare[1:]
		} else {
			sub = new(subscription)
		}
		sub.owner = st
		st.subs[name] = sub
		st.unsettled++
		st.fresh = append(st.fresh, freshSub{name, sub})
	}
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
// already settled by a response. Names with the same timeout share a
// timer.
func (s *stream) onWrittenLocked(typeURL string) {
	if s.ended {
		return
	}
	st := s.typeLocked(typeURL)
	fresh := st.fresh
	st.fresh = st.fresh[:0]
	// The first group (in practice the only one: the timeout is the
	// server's) takes its members in place in fresh, which it then owns;
	// another group's members are copied.
	var groups []*timerGroup
	kept := 0
	for _, f := range fresh {
		name, sub := f.name, f.sub
		// A name dropped since the request was built is settled too
		// (unsubscribeLocked stops its subscription, for good), so no
		// lookup in subs is needed to tell.
		if sub.settled || sub.timer != nil {
			continue
		}
		timeout, ok := s.host.TimerLocked(typeURL, name)
		if !ok {
			sub.markSettled()
			continue
		}
		i := slices.IndexFunc(groups, func(g *timerGroup) bool { return g.timeout == timeout })
		if i < 0 {
			i = len(groups)
			groups = append(groups, &timerGroup{typeURL: typeURL, start: s.cfg.Clock.Now(), timeout: timeout, heldAtStart: s.heldLocked()})
		}
		g := groups[i]
		if i == 0 {
			fresh[kept] = f
			kept++
		} else {
			g.members = append(g.members, f)
		}
		g.running++
		sub.timer = g
	}
	if len(groups) == 0 {
		return
	}
	groups[0].members = fresh[:kept:kept]
	st.fresh = nil
	for _, g := range groups {
		s.startTimerLocked(g, g.timeout)
	}
}

func (s *stream) startTimerLocked(g *timerGroup, after time.Duration) {
	g.stop = s.cfg.Clock.AfterFunc(after, func() { s.onTimer(g) })
}

func (s *stream) onTimer(g *timerGroup) {
	s.cfg.Lock.Lock()
	defer s.cfg.Lock.Unlock()
	if s.ended || g.running == 0 {
		return
	}
	g.stop = nil
	if h := s.holds.gate; h != nil && !h.isOpen() {
		s.holds.deferred = append(s.holds.deferred, g)
		return
	}
	s.expireOrExtendLocked(g)
}

// expireOrExtendLocked ends a timer that ran its length: the time the
// stream was held meanwhile does not count, so the timer is extended by
// it; once none is left, its names still waiting are declared missing.
func (s *stream) expireOrExtendLocked(g *timerGroup) {
	deadline := g.start.Add(g.timeout + s.heldLocked() - g.heldAtStart)
	if left := deadline.Sub(s.cfg.Clock.Now()); left > 0 {
		s.startTimerLocked(g, left)
		return
	}
	// TimeoutLocked notifies watchers and may change subscriptions, so
	// each name is checked as it comes.
	for _, m := range g.members {
		if s.ended {
			return
		}
		if m.sub.timer != g || s.types[g.typeURL].subs[m.name] != m.sub {
			continue
		}
		m.sub.timer = nil
		g.running--
		m.sub.markSettled()
		s.host.TimeoutLocked(g.typeURL, m.name)
	}
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
	for _, g := range deferred {
		if !s.ended && g.running > 0 {
			s.expireOrExtendLocked(g)
		}
	}
}

// settleLocked stops a name's timer: the resource, or an error for it,
// arrived on this stream.
func (st *streamType) settleLocked(name string) {
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

// stopLocked settles the subscription: its timer will not fire. The
// group's clock timer stops with the last of its names.
func (sub *subscription) stopLocked() {
	sub.markSettled()
	if g := sub.timer; g != nil {
		sub.timer = nil
		if g.running--; g.running == 0 && g.stop != nil {
			g.stop()
			g.stop = nil
		}
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
