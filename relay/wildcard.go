package relay

import (
	"sync"
	"time"

	"github.com/xdsengine/xdsengine/registry"
)

// upstreamWild is a type's upstream wildcard subscription.
type upstreamWild struct {
	refs      int
	idleSince time.Time
	cancel    func()
	// resolved: the upstream has answered the subscription, so every
	// resource of the type is known, present or not. Until then the
	// downstream wildcard watches are held.
	resolved bool
}

// acquireWildLocked adds a reference to the wildcard subscription,
// subscribing upstream (Engine.WatchAll) if there is none.
//
// The subscription is answered when the engine says that a response of
// the type was applied, every resource it changed delivered
// (OnAmbientError("", nil)). The engine says the same, before the
// resources, of a server that answers again after failing, with a
// response of any type: that one is not an answer, and the watcher tells
// it apart by the failure before it (see wildWatcher).
func (tc *typeCache) acquireWildLocked() {
	if tc.wild == nil {
		w := &upstreamWild{}
		tc.wild = w
		ww := &wildWatcher{tc: tc, w: w}
		// Held across the status read, so that no notice of the
		// subscription is taken before its watcher knows whether the
		// server is failing.
		ww.mu.Lock()
		w.cancel = tc.g.eng.WatchAll(tc.typeURL, ww)
		// Authorities runs after the WatchAll is registered: a failure
		// that comes later is told to the watcher, as is the recovery
		// from one that came earlier and lasts.
		ww.recovering = tc.g.upstreamFailing()
		ww.mu.Unlock()
	}
	tc.wild.refs++
}

func (tc *typeCache) releaseWildLocked(now time.Time) {
	tc.wild.refs--
	if tc.wild.refs == 0 {
		tc.wild.idleSince = now
	}
}

// upstreamFailing tells whether the active server of the names that are
// not xdstp:// URIs, those of wildcards, is failing.
func (g *group) upstreamFailing() bool {
	for _, a := range g.eng.Authorities() {
		if a.OldStyle {
			return a.Err != nil
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

	mu sync.Mutex
	// recovering: the server is failing, so the next ("", nil) says that
	// it answers again, which answers nothing: it comes before the
	// resources of whatever response brought the server back.
	recovering bool
}

func (w *wildWatcher) OnResourceChanged(name string, r registry.Resource, err error, done func()) {
	if name != "" {
		w.tc.g.noteUpstream(w.tc, name, err)
	}
	switch {
	case name == "":
		done() // the type cannot be watched; the registry has it, so never
	case err == nil:
		w.tc.g.post(w.tc, name, event{res: r}, done)
	case upstreamSaysAbsent(err):
		w.tc.g.post(w.tc, name, event{gone: true}, done)
	default:
		done()
	}
}

func (w *wildWatcher) OnAmbientError(name string, err error, done func()) {
	if name != "" {
		w.tc.g.noteUpstream(w.tc, name, err)
	}
	switch {
	case name == "" && err == nil:
		w.mu.Lock()
		recovered := w.recovering
		w.recovering = false
		w.mu.Unlock()
		if recovered {
			done()
			return
		}
		w.tc.g.answered(w.tc, w.w, done)
	case name == "":
		// The server is unreachable: the last good configuration stays,
		// and its return is not an answer.
		w.mu.Lock()
		w.recovering = true
		w.mu.Unlock()
		done()
	case deletedUpstream(err):
		w.tc.g.post(w.tc, name, event{gone: true}, done)
	default:
		// A failure of one resource: its last good version stays.
		done()
	}
}

// answered queues the news that the upstream answered a wildcard
// subscription: a response of its type was applied, every resource of it
// posted before.
func (g *group) answered(tc *typeCache, w *upstreamWild, done func()) {
	g.batchMu.Lock()
	g.wildAnswered[tc] = w
	g.dones = append(g.dones, done)
	g.batchMu.Unlock()
	g.kickFlusher()
}
