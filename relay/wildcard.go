package relay

import (
	"time"

	"github.com/xdsengine/xdsengine/registry"
)

// defaultWildcardWait is how long a wildcard subscription's server may
// stay silent, while reachable, before the relay takes it that the type
// has nothing more than it knows: the does-not-exist timer's length.
const defaultWildcardWait = 15 * time.Second

// wildcardSettle is how long the resources of a wildcard subscription's
// first answer must have stopped coming before the relay takes the
// answer as whole. The engine tells of a response's resources one at a
// time, as it applies the response part by part, and says nothing when
// it is done: a client holding the type's resources that were answered
// with the first of them would delete the others.
const wildcardSettle = 100 * time.Millisecond

// upstreamWild is a type's upstream wildcard subscription.
type upstreamWild struct {
	refs      int
	idleSince time.Time
	cancel    func()
	// resolved: the upstream has answered the subscription, so every
	// resource of the type is known, present or not. Until then the
	// downstream wildcard watches are held.
	resolved bool
	// answering: the answer has begun to arrive, last heard of at
	// lastHeard; it is taken as whole after wildcardSettle of silence.
	answering bool
	lastHeard time.Time
	// stopWait and stopSettle stop the timers of the wait for an answer
	// and for its end; nil when not running.
	stopWait, stopSettle func() bool
}

func (w *upstreamWild) resolve() {
	w.resolved = true
	for _, stop := range []*func() bool{&w.stopWait, &w.stopSettle} {
		if *stop != nil {
			(*stop)()
			*stop = nil
		}
	}
}

// acquireWildLocked adds a reference to the wildcard subscription,
// subscribing upstream (Engine.WatchAll) if there is none.
//
// The relay must know when the upstream has answered the wildcard, and
// the engine says so only of a server that comes back (OnAmbientError("",
// nil)). The answer is taken to begin with a resource that only the
// wildcard can have brought (one nobody watches by name), and to be whole
// once its resources stopped coming for wildcardSettle; for a type with
// nothing new to send, the server staying reachable and silent for the
// does-not-exist timer's length is the answer.
func (tc *typeCache) acquireWildLocked() {
	if tc.wild == nil {
		w := &upstreamWild{}
		tc.wild = w
		w.cancel = tc.g.eng.WatchAll(tc.typeURL, &wildWatcher{tc: tc, w: w})
		tc.armWildTimerLocked(w)
	}
	tc.wild.refs++
}

func (tc *typeCache) releaseWildLocked(now time.Time) {
	tc.wild.refs--
	if tc.wild.refs == 0 {
		tc.wild.idleSince = now
	}
}

func (tc *typeCache) armWildTimerLocked(w *upstreamWild) {
	wait := tc.g.r.cfg.Upstream.ResourceTimeout
	if wait <= 0 {
		wait = defaultWildcardWait
	}
	w.stopWait = tc.g.r.cfg.Clock.AfterFunc(wait, func() { tc.wildTimedOut(w) })
}

// wildTimedOut resolves a wildcard subscription whose server has stayed
// reachable and silent; one that is unreachable is waited for again:
// clients keep what they have.
func (tc *typeCache) wildTimedOut(w *upstreamWild) {
	if !tc.g.r.enterTimer() {
		return
	}
	defer tc.g.r.exitTimer()
	reachable := tc.g.upstreamConnected()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.wild != w || w.resolved {
		return
	}
	if !reachable {
		tc.armWildTimerLocked(w)
		return
	}
	tc.g.r.log.Info("relay: the upstream sent nothing for a wildcard subscription; the type has no more resources than the relay knows",
		"key", tc.g.key, "type", tc.typeURL)
	w.resolve()
	tc.releaseHeldLocked()
}

// answeringLocked notes that w's answer is arriving, and makes sure it is
// taken as whole once it stops.
func (tc *typeCache) answeringLocked(w *upstreamWild) {
	w.answering = true
	w.lastHeard = tc.g.r.cfg.Clock.Now()
	if w.stopSettle == nil {
		w.stopSettle = tc.g.r.cfg.Clock.AfterFunc(wildcardSettle, func() { tc.wildSettled(w) })
	}
}

// wildSettled resolves w if its answer stopped coming, or waits more.
func (tc *typeCache) wildSettled(w *upstreamWild) {
	if !tc.g.r.enterTimer() {
		return
	}
	defer tc.g.r.exitTimer()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.wild != w || w.resolved {
		return
	}
	if quiet := tc.g.r.cfg.Clock.Now().Sub(w.lastHeard); quiet < wildcardSettle {
		w.stopSettle = tc.g.r.cfg.Clock.AfterFunc(wildcardSettle-quiet, func() { tc.wildSettled(w) })
		return
	}
	w.resolve()
	tc.releaseHeldLocked()
}

// upstreamConnected tells whether the servers of names that are not
// xdstp:// URIs, those of wildcards, answer.
func (g *group) upstreamConnected() bool {
	for _, a := range g.eng.Authorities() {
		if a.OldStyle {
			return a.Active != "" && a.Connected
		}
	}
	return false
}

// wildWatcher is a type's upstream wildcard watch: each call is about the
// resource called name, as a nameWatcher's are about its own; name "" is
// the subscription as a whole.
type wildWatcher struct {
	tc *typeCache
	w  *upstreamWild
}

func (w *wildWatcher) OnResourceChanged(name string, r registry.Resource, err error, done func()) {
	switch {
	case name == "":
		done() // the type cannot be watched; the registry has it, so never
	case err == nil:
		w.tc.g.post(w.tc, name, event{res: r, wild: w.w}, done)
	case upstreamSaysAbsent(err):
		w.tc.g.post(w.tc, name, event{gone: true, wild: w.w}, done)
	default:
		done()
	}
}

func (w *wildWatcher) OnAmbientError(name string, err error, done func()) {
	switch {
	case name == "" && err == nil:
		w.tc.g.answered(w.tc, w.w, done)
	case name != "" && deletedUpstream(err):
		w.tc.g.post(w.tc, name, event{gone: true, wild: w.w}, done)
	default:
		// A failure, of the server or of one resource: the last good
		// configuration stays.
		done()
	}
}

// answered queues the news that a wildcard subscription's server answers
// again.
func (g *group) answered(tc *typeCache, w *upstreamWild, done func()) {
	g.batchMu.Lock()
	g.wildAnswered[tc] = w
	g.dones = append(g.dones, done)
	g.batchMu.Unlock()
	g.kickFlusher()
}
