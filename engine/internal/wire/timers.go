package wire

import (
	"strings"
	"time"

	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
)

// subscription is one name on one stream. Its does-not-exist timer runs
// from the first write of the name on this stream until the resource (or
// an error for it) arrives, and only if nothing was cached when the host
// handed it over (A57, A88).
type subscription struct {
	awaited bool // nothing cached: a timer starts once written
	settled bool // answered, expired, or never awaited
	// timer is the group whose timer runs for this name, nil once it is
	// settled or if it never needed one.
	timer *timerGroup
}

// freshSub is a name new in the request being written.
type freshSub struct {
	name string
	sub  *subscription
}

// timerGroup is the does-not-exist timer of the names one request wrote
// for the first time. They start together and run for the same length,
// so one clock timer serves them all: a cold start of 1,000 watches
// starts one timer, not 1,000, and a resource's arrival costs a count,
// not a timer's stop. The timer runs from start for timeout, plus the
// time the stream was held since (its held time was heldAtStart then).
type timerGroup struct {
	typeURL     string
	start       time.Time
	timeout     time.Duration
	heldAtStart time.Duration
	members     []freshSub
	// running counts the members whose timer is this group's: at zero the
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
	// responses; the hold ends when the gate opens.
	gate  *Gate
	start time.Time
	sum   time.Duration // earlier holds
	// deferred are timers that expired during a hold.
	deferred []*timerGroup
}

func (st *typeState) subscribe(name string, awaited bool) {
	if _, ok := st.subs[name]; ok {
		return
	}
	if len(st.spare) == 0 {
		st.spare = make([]subscription, 64)
	}
	sub := &st.spare[0]
	st.spare = st.spare[1:]
	*sub = subscription{awaited: awaited}
	st.subs[name] = sub
	st.unsettled++
	st.fresh = append(st.fresh, freshSub{name, sub})
}

func (st *typeState) unsubscribe(name string) {
	if sub := st.subs[name]; sub != nil {
		sub.stop(st)
		delete(st.subs, name)
	}
}

// startTimersLocked starts one timer for the names the request just
// written named for the first time on this stream and that are still
// awaited: not settled by a response meanwhile, nor dropped.
func (s *stream) startTimersLocked(typeURL string, st *typeState) {
	if s.stopped.Load() {
		return
	}
	var g *timerGroup
	kept := 0
	for _, f := range st.fresh {
		sub := f.sub
		if !sub.awaited {
			sub.markSettled(st)
			continue
		}
		if sub.settled || sub.timer != nil {
			continue
		}
		if g == nil {
			g = &timerGroup{typeURL: typeURL, start: s.cfg.Clock.Now(), timeout: st.timeout, heldAtStart: s.heldLocked()}
		}
		st.fresh[kept] = f
		kept++
		g.running++
		sub.timer = g
	}
	if g == nil {
		st.fresh = st.fresh[:0]
		return
	}
	// The group takes the list over; the next request starts a new one.
	g.members, st.fresh = st.fresh[:kept:kept], nil
	s.startTimerLocked(g, g.timeout)
}

func (s *stream) startTimerLocked(g *timerGroup, after time.Duration) {
	g.stop = s.cfg.Clock.AfterFunc(after, func() { s.onTimer(g) })
}

func (s *stream) onTimer(g *timerGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Load() || g.running == 0 {
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
// it; once none is left, its names still awaited are reported missing.
// The host hears of them with the stream's lock held, so that no response
// can settle them in between.
func (s *stream) expireOrExtendLocked(g *timerGroup) {
	deadline := g.start.Add(g.timeout + s.heldLocked() - g.heldAtStart)
	if left := deadline.Sub(s.cfg.Clock.Now()); left > 0 {
		s.startTimerLocked(g, left)
		return
	}
	st := s.types[g.typeURL]
	var names []string
	for _, m := range g.members {
		if m.sub.timer != g || st.subs[m.name] != m.sub {
			continue
		}
		m.sub.timer = nil
		g.running--
		m.sub.markSettled(st)
		names = append(names, m.name)
	}
	if len(names) > 0 {
		s.host.Timeout(g.typeURL, names)
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
		if !s.stopped.Load() && g.running > 0 {
			s.expireOrExtendLocked(g)
		}
	}
}

// settle stops a name's timer: the resource, or an error for it, arrived
// on this stream.
func (st *typeState) settle(name string) {
	if sub := st.subs[name]; sub != nil {
		sub.stop(st)
		return
	}
	// A member of a glob collection answers the collection's
	// subscription (xRFC TP1).
	if glob, ok := xdsname.GlobOf(name); ok {
		if sub := st.subs[glob]; sub != nil {
			sub.stop(st)
		}
	}
}

// stop settles the subscription: its timer will not fire. The group's
// clock timer stops with the last of its names.
func (sub *subscription) stop(st *typeState) {
	sub.markSettled(st)
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
func (sub *subscription) markSettled(st *typeState) {
	if !sub.settled {
		sub.settled = true
		st.unsettled--
	}
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
				s.logSlowWatchers(pending, n)
				s.host.SlowWatchers(countByType(pending))
			}
		}
	}
}

// countByType counts the pending resources of each type.
func countByType(pending []Pending) map[string]int {
	perType := map[string]int{}
	for _, p := range pending {
		perType[p.TypeURL]++
	}
	return perType
}

// logSlowWatchers warns that watchers hold reads, naming the first
// resources they are about.
func (s *stream) logSlowWatchers(pending []Pending, notifications int) {
	var named []string
	for _, p := range pending[:min(len(pending), 10)] {
		t := registry.ResourceType{TypeURL: p.TypeURL}
		if known, ok := s.cfg.Names.Type(p.TypeURL); ok {
			t = *known
		}
		named = append(named, t.ShortName()+" "+QuoteName(p.Name))
	}
	s.cfg.Log.Warn("xDS watchers have not called done; reads from the server are held until they do",
		"server", s.cfg.DecodeOptions.Server.URI, "after", s.cfg.SlowWatcherThreshold, "notifications", notifications,
		"resources", len(pending), "first", strings.Join(named, ", "))
}
