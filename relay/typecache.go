package relay

import (
	"bytes"
	"sync"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// typeCache is one key's resources of one type: the upstream
// subscriptions (a reference-counted union of the downstream ones) and
// the serving cache that serves them downstream. Its mutex is taken
// before a downstream watch's, which is taken before the serving cache's.
type typeCache struct {
	g       *group
	typeURL string
	// unknown: the registry has no such type; nothing is subscribed
	// upstream and every name counts as known not to exist.
	unknown bool
	// fullState: a State of the World response lists every subscribed
	// resource, so an absent one is deleted (LDS, CDS), as
	// go-control-plane decides it.
	fullState bool
	serving   *servingCache

	mu sync.Mutex
	// names are the upstream subscriptions by name; idle are those that
	// no downstream watch holds, with the time the last one let go.
	names map[string]*upstreamName
	idle  map[string]time.Time
	// wild is the upstream wildcard subscription, nil when none.
	wild *upstreamWild
	// served holds the bytes the serving cache serves, by name; absent the
	// names the upstream says do not exist. A name in neither is not
	// resolved yet.
	served map[string][]byte
	absent map[string]struct{}
	// unsettled are the names subscribed upstream that are in neither:
	// the only ones a new watch may have to wait for, but for a wildcard
	// subscription's (see open).
	unsettled map[string]struct{}
	// watches counts the downstream watches (held or not); held are those
	// waiting for names to be resolved.
	watches int
	held    map[*downWatch]struct{}
}

type upstreamName struct {
	refs   int
	cancel func()
}

func newTypeCache(g *group, typeURL string, unknown bool) *typeCache {
	return &typeCache{
		g:         g,
		typeURL:   typeURL,
		unknown:   unknown,
		fullState: cache.ResourceRequiresFullStateInSotw(typeURL),
		serving:   newServingCache(typeURL, g.r.prefix, g.r.cfg.Clock.Now),
		names:     map[string]*upstreamName{},
		idle:      map[string]time.Time{},
		served:    map[string][]byte{},
		absent:    map[string]struct{}{},
		unsettled: map[string]struct{}{},
		held:      map[*downWatch]struct{}{},
	}
}

// resolvedLocked tells whether the relay knows the state of name
// upstream: it has a version of it, or knows it does not exist.
func (tc *typeCache) resolvedLocked(name string) bool {
	if tc.unknown || (tc.wild != nil && tc.wild.resolved) {
		return true
	}
	if _, ok := tc.served[name]; ok {
		return true
	}
	_, ok := tc.absent[name]
	return ok
}

// coveredLocked tells whether an upstream subscription covers name, so
// that news of it is kept.
func (tc *typeCache) coveredLocked(name string) bool {
	return tc.names[name] != nil || tc.wild != nil
}

// acquireLocked adds a downstream watch's references to the upstream
// subscriptions, subscribing upstream what is new.
func (tc *typeCache) acquireLocked(names map[string]struct{}, wildcard bool) {
	if tc.unknown {
		return
	}
	for name := range names {
		n := tc.names[name]
		if n == nil {
			n = &upstreamName{}
			if _, ok := tc.served[name]; !ok {
				if _, ok := tc.absent[name]; !ok {
					tc.unsettled[name] = struct{}{}
				}
			}
			tc.names[name] = n
			n.cancel = tc.g.eng.Watch(tc.typeURL, name, &nameWatcher{tc: tc, name: name})
		}
		if n.refs == 0 {
			delete(tc.idle, name)
		}
		n.refs++
	}
	if wildcard {
		tc.acquireWildLocked()
	}
}

// releaseLocked takes a downstream watch's references back. Upstream
// subscriptions without references stay for the linger, so that the
// server's cancel-then-watch of every request costs nothing upstream.
func (tc *typeCache) releaseLocked(names map[string]struct{}, wildcard bool) {
	if tc.unknown {
		return
	}
	now := tc.g.r.cfg.Clock.Now()
	for name := range names {
		n := tc.names[name]
		if n == nil || n.refs == 0 {
			// The server changed the subscription before cancelling its
			// watch, against go-control-plane's contract.
			tc.g.r.log.Error("relay: a subscription changed under its watch; its upstream references may be off", "key", tc.g.key, "type", tc.typeURL, "name", name)
			continue
		}
		n.refs--
		if n.refs == 0 {
			tc.idle[name] = now
		}
	}
	if wildcard {
		tc.releaseWildLocked(now)
	}
	if len(names) > 0 || wildcard {
		tc.g.armReaper(now.Add(tc.g.r.cfg.Linger))
	}
}

// reap ends the upstream subscriptions idle for the linger and forgets
// what they brought. It returns the next time one falls due, zero if
// none.
func (tc *typeCache) reap(now time.Time) (next time.Time) {
	linger := tc.g.r.cfg.Linger
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var ended []string
	for name, since := range tc.idle {
		if due := since.Add(linger); due.After(now) {
			next = earliest(next, due)
			continue
		}
		tc.names[name].cancel()
		delete(tc.names, name)
		delete(tc.unsettled, name)
		delete(tc.idle, name)
		ended = append(ended, name)
	}
	if w := tc.wild; w != nil && w.refs == 0 {
		if due := w.idleSince.Add(linger); due.After(now) {
			next = earliest(next, due)
		} else {
			w.cancel()
			tc.wild = nil
			for name := range tc.served {
				ended = append(ended, name)
			}
			for name := range tc.absent {
				ended = append(ended, name)
			}
		}
	}
	var deletes, forgotten []string
	for _, name := range ended {
		if tc.coveredLocked(name) {
			continue
		}
		forgotten = append(forgotten, name)
		delete(tc.absent, name)
		if _, ok := tc.served[name]; ok {
			delete(tc.served, name)
			deletes = append(deletes, name)
		}
	}
	if len(deletes) > 0 {
		// No downstream watch holds these names, and none is a wildcard
		// one (the wildcard subscription would cover them): the deletion
		// reaches nobody, it only frees the memory.
		tc.serving.update(nil, deletes)
	}
	tc.g.forgetNACKs(tc.typeURL, forgotten...)
	return next
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// idleLocked tells whether the type has nothing left: no downstream
// watch and no upstream subscription.
func (tc *typeCache) idleLocked() bool {
	return tc.watches == 0 && len(tc.names) == 0 && tc.wild == nil
}

// change is what the upstream said of one resource: a new version, or
// that it does not exist (gone).
type change struct {
	bytes []byte
	gone  bool
}

// apply applies upstream changes (encoded already), then starts the held
// downstream watches whose names are now all resolved. answered is a
// wildcard subscription the upstream answered, after these changes.
func (tc *typeCache) apply(changes map[string]change, answered *upstreamWild) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	updates := map[string][]byte{}
	var deletes []string
	for name, c := range changes {
		if !tc.coveredLocked(name) {
			continue // news from a subscription that has just ended
		}
		if c.gone {
			tc.absent[name] = struct{}{}
			delete(tc.unsettled, name)
			if _, ok := tc.served[name]; ok {
				delete(tc.served, name)
				deletes = append(deletes, name)
			}
			continue
		}
		delete(tc.absent, name)
		if old, ok := tc.served[name]; ok && bytes.Equal(old, c.bytes) {
			continue
		}
		tc.served[name] = c.bytes
		delete(tc.unsettled, name)
		updates[name] = c.bytes
	}
	if len(updates) > 0 || len(deletes) > 0 {
		tc.serving.update(updates, deletes)
	}
	if w := tc.wild; w != nil && answered == w {
		w.resolved = true
	}
	tc.releaseHeldLocked()
}

// releaseHeldLocked starts the held watches that wait for nothing more.
func (tc *typeCache) releaseHeldLocked() {
	for w := range tc.held {
		if tc.waitingLocked(w) {
			continue
		}
		delete(tc.held, w)
		w.start()
	}
}

// waitingLocked tells whether w still waits for names to be resolved,
// forgetting those that are.
func (tc *typeCache) waitingLocked(w *downWatch) bool {
	if w.waitWildcard && (tc.wild == nil || !tc.wild.resolved) {
		return true
	}
	w.waitWildcard = false
	kept := w.wait[:0]
	for _, name := range w.wait {
		if !tc.resolvedLocked(name) {
			kept = append(kept, name)
		}
	}
	w.wait = kept
	return len(kept) > 0
}
