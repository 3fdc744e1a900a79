package relay

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// servingCache serves one key's resources of one type to go-control-plane's
// server, with the contracts of its LinearCache: one-shot watches, a
// response's ReturnedResources the stream's whole known state, State of the
// World responses of every subscribed resource for the full-state types
// (LDS, CDS), incremental ones of what changed. Unlike the LinearCache,
// what a change costs a stream is proportional to what changed, not to
// every resource: each change is logged by version, and the cache
// remembers the version each map of returned resources it built is
// current at (a stamp), so a watch of a stream it answered compares only
// the resources changed since. Without a stamp (a new stream, a client
// that took longer than stampTTL to ask again, or one further behind than
// the log), a watch compares everything once, as the LinearCache does.
// What stays proportional to every resource a stream knows is the copy of
// its returned resources each response carries (see nextReturned): the
// server's map, which the cache must not alter.
type servingCache struct {
	typeURL   string
	prefix    string
	fullState bool
	now       func() time.Time

	mu      sync.Mutex
	version uint64
	// resources are the resources served, by name.
	resources map[string]*servedResource
	// changes logs every change after version floor (the deletions are
	// the tombstones), in ascending versions; it is kept about as long as
	// there are resources, since comparing everything costs no more.
	changes []loggedChange
	floor   uint64
	// watches are the open watches not answered yet.
	watches map[*servingWatch]struct{}
	// stamps are by the identity of the map they describe; stampQueue
	// orders them by age, for stampTTL.
	stamps     map[uintptr]*stamp
	stampQueue []*stamp
	// compared counts the names compared with what a stream knows: the
	// work of the fan-out.
	compared int
}

// minChangeLog is the length the change log may reach whatever the
// number of resources.
const minChangeLog = 256

// servedResource is one version of a resource, encoded once for every
// stream that is sent it.
type servedResource struct {
	// version is the cache's version when it last changed; sotwVersion is
	// its version in a State of the World stream's returned resources,
	// and hash its version on an incremental stream, as the LinearCache
	// versions them: a client's versions from before a relay restart are
	// still recognised.
	version     uint64
	sotwVersion string
	hash        string
	any         *anypb.Any
	delta       *discoverypb.Resource
}

type loggedChange struct {
	version uint64
	name    string
}

// servingWatch is one watch of the server: exactly one of ch and dch is
// set.
type servingWatch struct {
	sub  cache.Subscription
	req  *cache.Request
	ch   chan cache.Response
	dreq *cache.DeltaRequest
	dch  chan cache.DeltaResponse
	// base is what the watch's returned resources are known to agree
	// with; nil until the watch is first compared with everything.
	base *stamp
}

func newServingCache(typeURL, prefix string, now func() time.Time) *servingCache {
	return &servingCache{
		typeURL:   typeURL,
		prefix:    prefix,
		fullState: cache.ResourceRequiresFullStateInSotw(typeURL),
		now:       now,
		resources: map[string]*servedResource{},
		watches:   map[*servingWatch]struct{}{},
		stamps:    map[uintptr]*stamp{},
	}
}

// CreateWatch opens a State of the World watch. A request of no version,
// or of another cache's, is answered at once even if nothing differs.
func (c *servingCache) CreateWatch(req *cache.Request, sub cache.Subscription, ch chan cache.Response) (func(), error) {
	if req.GetTypeUrl() != c.typeURL {
		return nil, fmt.Errorf("relay: a request of type %s to the cache of %s", req.GetTypeUrl(), c.typeURL)
	}
	v := req.GetVersionInfo()
	return c.open(&servingWatch{sub: sub, req: req, ch: ch}, v == "" || !strings.HasPrefix(v, c.prefix), nil), nil
}

// CreateDeltaWatch opens an incremental watch. A wildcard stream's first
// request is answered at once: Envoy waits for it to complete its start.
func (c *servingCache) CreateDeltaWatch(req *cache.DeltaRequest, sub cache.Subscription, ch chan cache.DeltaResponse) (func(), error) {
	if req.GetTypeUrl() != c.typeURL {
		return nil, fmt.Errorf("relay: a request of type %s to the cache of %s", req.GetTypeUrl(), c.typeURL)
	}
	changed := append(append([]string(nil), req.GetResourceNamesSubscribe()...), req.GetResourceNamesUnsubscribe()...)
	w := &servingWatch{sub: sub, dreq: req, dch: ch}
	return c.open(w, sub.IsWildcard() && req.GetResponseNonce() == "", changed), nil
}

// open answers w at once if it must be, or keeps it for a change. changed
// are the names whose subscription the request changed (incremental). The
// cancel function returned is nil for a watch answered at once.
func (c *servingCache) open(w *servingWatch, replyEvenIfEmpty bool, changed []string) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.base = c.takeStampLocked(w.sub, w.dch != nil, changed)
	if c.answerLocked(w, replyEvenIfEmpty) {
		return nil
	}
	c.watches[w] = struct{}{}
	return func() { c.cancel(w) }
}

// cancel closes w. An unanswered watch gives its stamp back, for the next
// watch of its stream: a cancel is not an unsubscribe.
func (c *servingCache) cancel(w *servingWatch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, open := c.watches[w]; !open {
		return
	}
	delete(c.watches, w)
	if w.base != nil {
		c.putStampLocked(w.base)
	}
}

// update applies a change: new versions of resources (their bytes) and
// deletions, as one version; then it answers the watches it concerns.
func (c *servingCache) update(updates map[string][]byte, deletes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	sotwVersion := c.versionString()
	for name, b := range updates {
		a := &anypb.Any{TypeUrl: c.typeURL, Value: b}
		hash := cache.HashResource(b)
		c.resources[name] = &servedResource{version: c.version, sotwVersion: sotwVersion, hash: hash, any: a,
			delta: &discoverypb.Resource{Name: name, Version: hash, Resource: a}}
		c.changes = append(c.changes, loggedChange{c.version, name})
	}
	for _, name := range deletes {
		delete(c.resources, name)
		c.changes = append(c.changes, loggedChange{c.version, name})
	}
	c.trimLocked()
	for w := range c.watches {
		if c.answerLocked(w, false) {
			delete(c.watches, w)
		}
	}
}

func (c *servingCache) versionString() string {
	return c.prefix + strconv.FormatUint(c.version, 10)
}

// trimLocked keeps the change log about as long as there are resources:
// a stream further behind is compared with everything, which costs no
// more than reading the log would.
func (c *servingCache) trimLocked() {
	keep := max(len(c.resources), minChangeLog)
	if len(c.changes) <= 2*keep {
		return
	}
	cut := len(c.changes) - keep
	c.floor = c.changes[cut-1].version
	for cut < len(c.changes) && c.changes[cut].version == c.floor {
		cut++
	}
	c.changes = append([]loggedChange(nil), c.changes[cut:]...)
}

// answerLocked compares w's returned resources with the cache and
// answers w if they differ (or replyEvenIfEmpty), as the LinearCache
// would; otherwise it stamps w as current. It tells whether w was
// answered.
func (c *servingCache) answerLocked(w *servingWatch, replyEvenIfEmpty bool) bool {
	changed, removed := c.diffLocked(w)
	if c.respondLocked(w, changed, removed, replyEvenIfEmpty) {
		return true
	}
	// A State of the World response of a type that is not full-state
	// cannot say that a resource is gone: the removed ones stay to
	// compare.
	next := &stamp{m: w.sub.ReturnedResources(), version: c.version, wildcard: w.sub.IsWildcard(),
		subscribed: w.sub.SubscribedResources(), extra: removed}
	if w.base != nil {
		next.ours, next.touched, next.spare = w.base.ours, w.base.touched, w.base.spare
	}
	w.base = next
	return false
}

// diffLocked returns the names w's stream should be sent (new, or of
// another version than it knows) and those it should forget (gone, or no
// longer subscribed): of the names changed since w's base if it has one,
// of every name otherwise.
func (c *servingCache) diffLocked(w *servingWatch) (changed, removed []string) {
	known := w.sub.ReturnedResources()
	delta := w.dch != nil
	if base := w.base; base != nil && base.version >= c.floor {
		i := sort.Search(len(c.changes), func(i int) bool { return c.changes[i].version > base.version })
		seen := map[string]struct{}{}
		check := func(name string) {
			if _, dup := seen[name]; !dup {
				seen[name] = struct{}{}
				changed, removed = c.classifyLocked(name, w.sub, known, delta, changed, removed)
			}
		}
		for _, name := range base.extra {
			check(name)
		}
		for _, ch := range c.changes[i:] {
			check(ch.name)
		}
		return changed, removed
	}
	if w.sub.IsWildcard() {
		for name := range c.resources {
			changed, removed = c.classifyLocked(name, w.sub, known, delta, changed, removed)
		}
		for name := range known {
			if _, ok := c.resources[name]; !ok {
				changed, removed = c.classifyLocked(name, w.sub, known, delta, changed, removed)
			}
		}
		return changed, removed
	}
	subscribed := w.sub.SubscribedResources()
	for name := range subscribed {
		changed, removed = c.classifyLocked(name, w.sub, known, delta, changed, removed)
	}
	for name := range known {
		if _, ok := subscribed[name]; !ok {
			changed, removed = c.classifyLocked(name, w.sub, known, delta, changed, removed)
		}
	}
	return changed, removed
}

// classifyLocked adds name to changed or removed if the stream's known
// version of it differs from the cache for its subscription.
func (c *servingCache) classifyLocked(name string, sub cache.Subscription, known map[string]string, delta bool, changed, removed []string) ([]string, []string) {
	c.compared++
	version, isKnown := known[name]
	_, subscribed := sub.SubscribedResources()[name]
	res, exists := c.resources[name]
	switch {
	case !sub.IsWildcard() && !subscribed:
		if isKnown {
			removed = append(removed, name)
		}
	case exists:
		if !isKnown || version != res.versionFor(delta) {
			changed = append(changed, name)
		}
	case isKnown:
		removed = append(removed, name)
	}
	return changed, removed
}

func (r *servedResource) versionFor(delta bool) string {
	if delta {
		return r.hash
	}
	return r.sotwVersion
}

// respondLocked sends w its response, if there is one to send, and stamps
// the returned resources it carries.
func (c *servingCache) respondLocked(w *servingWatch, changed, removed []string, replyEvenIfEmpty bool) bool {
	delta := w.dch != nil
	if len(changed) == 0 && len(removed) == 0 && !replyEvenIfEmpty {
		return false
	}
	send := changed
	switch {
	case delta || !c.fullState:
		if !delta && !replyEvenIfEmpty && len(changed) == 0 {
			return false // State of the World cannot say that these are gone
		}
	case w.sub.IsWildcard():
		send = make([]string, 0, len(c.resources))
		for name := range c.resources {
			send = append(send, name)
		}
	default:
		send = nil
		for name := range w.sub.SubscribedResources() {
			if _, ok := c.resources[name]; ok {
				send = append(send, name)
			}
		}
	}
	// The stream's map is the server's: the response carries the next
	// one, built when the server asks for it, which it does on the
	// stream's goroutine once the response is sent: the copy (as long as
	// the stream knows resources) costs neither this loop over the
	// streams nor the client's wait.
	next := &nextReturned{base: w.sub.ReturnedResources(), names: send, removed: removed,
		versions: make([]string, len(send))}
	for i, name := range send {
		next.versions[i] = c.resources[name].versionFor(delta)
	}
	st := &stamp{version: c.version, wildcard: w.sub.IsWildcard(), subscribed: w.sub.SubscribedResources(), ours: true}
	if b := w.base; b != nil && b.ours {
		// The server lets go of the stream's map when it sets the next
		// one: the next stamp's spare, recycled for the response after.
		st.spare = &spareMap{m: next.base, diff: append(append([]string(nil), send...), removed...)}
		if b.spare != nil {
			next.spare = b.spare
			next.sync = append(append([]string(nil), b.spare.diff...), b.touched...)
		}
	}
	next.stamp = func(m map[string]string) {
		if st.spare == nil {
			// A first spare, so that even the stream's next response
			// copies nothing: made now, on the stream's goroutine.
			st.spare = &spareMap{m: maps.Clone(m)}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		st.m = m
		c.putStampLocked(st)
	}
	version := c.versionString()
	if delta {
		out := &discoverypb.DeltaDiscoveryResponse{TypeUrl: c.typeURL, SystemVersionInfo: version, RemovedResources: removed,
			Resources: make([]*discoverypb.Resource, 0, len(send))}
		for _, name := range send {
			out.Resources = append(out.Resources, c.resources[name].delta)
		}
		w.dch <- &deltaResponse{req: w.dreq, out: out, version: version, next: next}
	} else {
		out := &discoverypb.DiscoveryResponse{TypeUrl: c.typeURL, VersionInfo: version, Resources: make([]*anypb.Any, 0, len(send))}
		for _, name := range send {
			out.Resources = append(out.Resources, c.resources[name].any)
		}
		w.ch <- &sotwResponse{req: w.req, out: out, version: version, next: next}
	}
	return true
}
