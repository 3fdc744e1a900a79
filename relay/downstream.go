package relay

import (
	"sync"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// downWatch is one watch of go-control-plane's server: one request of one
// downstream stream, for one type, answered at most once. It holds
// references on the upstream subscriptions its request names from
// creation until the server cancels it, which the server does before
// creating the stream's next watch of the type, or when the stream ends.
type downWatch struct {
	tc *typeCache
	// Exactly one of sotw and delta is set, with its channel.
	sotw  *cache.Request
	ch    chan cache.Response
	delta *cache.DeltaRequest
	dch   chan cache.DeltaResponse
	sub   cache.Subscription
	// subscribed and wildcard are the subscription the references are
	// held for. subscribed is the server's own map, not a copy (a copy
	// would cost every stream a slice as long as its subscription): the
	// server changes a subscription only after it cancelled the watch of
	// it, and it makes a new map for each State of the World request.
	subscribed map[string]struct{}
	wildcard   bool

	// wait and waitWildcard are what the watch is held for (guarded by
	// tc.mu): names the client may hold that the relay has not resolved.
	wait         []string
	waitWildcard bool

	mu          sync.Mutex
	state       watchState
	stopServing func()
	endOnce     sync.Once
}

type watchState int

const (
	watchHeld watchState = iota
	watchStarted
	watchEnded
)

// open takes the watch's references and starts it, or holds it until the
// upstream has said enough.
//
// A watch is held while answering it could say something the upstream has
// not: that a resource is gone, or nothing at all. The relay knows the
// state of a name upstream once it is resolved (the relay has a version
// of it, or word that it does not exist). Held are
//   - a wildcard subscription, until the upstream wildcard one is
//     answered (an Envoy that would otherwise complete its start with no
//     clusters);
//   - a State of the World subscription, until every name it subscribes
//     is resolved: its response lists every subscribed LDS or CDS
//     resource, so one left out is deleted, and a first response without
//     the resources says nothing but costs the client a round trip;
//   - an incremental subscription, until the resources its client says
//     it has (initial_resource_versions, and what this stream was sent)
//     are resolved: its response removes what is known and absent, and
//     names what it sends, so an unresolved name it does not hold is
//     simply not sent yet.
//
// A client whose upstream is unreachable is thus left with the
// configuration it has, rather than told that it is gone.
func (tc *typeCache) open(w *downWatch) {
	w.subscribed, w.wildcard = w.sub.SubscribedResources(), w.sub.IsWildcard()

	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.watches++
	tc.acquireLocked(w.subscribed, w.wildcard)
	w.waitWildcard = w.wildcard && !tc.unknown
	if w.sotw != nil {
		tc.waitSubscribedLocked(w)
	} else {
		tc.waitReturnedLocked(w)
	}
	if tc.waitingLocked(w) {
		tc.held[w] = struct{}{}
		return
	}
	w.start()
}

// waitSubscribedLocked makes a State of the World watch wait for every
// name it subscribes that is not resolved. Such a name is unsettled (it is
// subscribed upstream, and the upstream has not answered it), so the walk
// is of the shorter of the subscription and the unsettled names: an ACK
// costs no more than the names the upstream has yet to answer, few but
// while it is down, whatever the number of resources.
func (tc *typeCache) waitSubscribedLocked(w *downWatch) {
	if len(w.subscribed) < len(tc.unsettled) {
		for name := range w.subscribed {
			if _, ok := tc.unsettled[name]; ok && !tc.resolvedLocked(name) {
				w.wait = append(w.wait, name)
			}
		}
		return
	}
	for name := range tc.unsettled {
		if _, ok := w.subscribed[name]; ok && !tc.resolvedLocked(name) {
			w.wait = append(w.wait, name)
		}
	}
}

// waitReturnedLocked makes an incremental watch wait for the names its
// client holds that are not resolved. Only unsettled names can be: a
// subscribed name is subscribed upstream, and a name a wildcard watch
// alone covers is resolved by the wildcard subscription's answer, which
// the watch waits for anyway (waitWildcard).
func (tc *typeCache) waitReturnedLocked(w *downWatch) {
	returned := w.sub.ReturnedResources()
	for name := range tc.unsettled {
		if version, ok := returned[name]; !ok || version == "" {
			continue // not held, or unsubscribed from under a wildcard
		}
		if _, ok := w.subscribed[name]; (ok || w.wildcard) && !tc.resolvedLocked(name) {
			w.wait = append(w.wait, name)
		}
	}
}

// start hands the watch to the serving cache, which answers it now or at
// the next change. Called with tc.mu held.
func (w *downWatch) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != watchHeld {
		return
	}
	w.state = watchStarted
	var err error
	if w.delta != nil {
		w.stopServing, err = w.tc.serving.CreateDeltaWatch(w.delta, w.sub, w.dch)
	} else {
		w.stopServing, err = w.tc.serving.CreateWatch(w.sotw, w.sub, w.ch)
	}
	if err != nil {
		// The serving cache refuses only another type's request,
		// which cannot happen here.
		w.tc.g.r.log.Error("relay: the downstream cache refused a watch", "key", w.tc.g.key, "type", w.tc.typeURL, "error", err)
	}
}

// end is the cancel function the server gets: it stops the watch and
// gives its references back. After it returns, nothing is sent on the
// watch's channel. It may be called more than once.
func (w *downWatch) end() {
	w.endOnce.Do(func() {
		w.mu.Lock()
		w.state = watchEnded
		stop := w.stopServing
		w.stopServing = nil
		w.mu.Unlock()
		if stop != nil {
			stop()
		}
		tc := w.tc
		tc.mu.Lock()
		delete(tc.held, w)
		tc.watches--
		tc.releaseLocked(w.subscribed, w.wildcard)
		tc.mu.Unlock()
		tc.g.r.releaseGroup(tc.g)
	})
}
