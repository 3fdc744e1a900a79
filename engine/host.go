package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/transport"
)

// streamHost is a channel's side of one of its streams (wire.Host),
// called from the stream's goroutines; each call takes the engine's
// lock, and is ignored once the channel has moved on to another stream.
type streamHost struct{ c *channel }

// current takes the engine's lock and reports whether h is still its
// channel's host; if not, it lets go of the lock.
func (h *streamHost) current() bool {
	h.c.e.mu.Lock()
	if h.c.host != h || h.c.closed {
		h.c.e.mu.Unlock()
		return false
	}
	return true
}

func (h *streamHost) Subscription(typeURL string) wire.Subscription {
	if !h.current() {
		return wire.Subscription{}
	}
	defer h.c.e.mu.Unlock()
	return h.c.subscriptionLocked(typeURL)
}

func (h *streamHost) Apply(p wire.Part) {
	if !h.current() {
		return
	}
	defer h.c.e.mu.Unlock()
	h.c.applyLocked(p)
}

// Timeout: resources did not arrive in time.
func (h *streamHost) Timeout(typeURL string, names []string) {
	if !h.current() {
		return
	}
	defer h.c.e.mu.Unlock()
	for _, name := range names {
		if _, en := h.c.e.lookupEntryLocked(typeURL, name); en != nil {
			h.c.e.onTimerLocked(en, h.c)
		}
	}
}

func (h *streamHost) Ended(err error, sawResponse bool) {
	if !h.current() {
		return
	}
	defer h.c.e.mu.Unlock()
	h.c.endedLocked(err, sawResponse)
}

// SlowWatchers logs the resources whose watchers have not called done,
// and counts them per type.
func (h *streamHost) SlowWatchers(pending []wire.Pending, notifications int) {
	c, e := h.c, h.c.e
	const maxNamed = 10
	var named []string
	perType := map[string]int{}
	for _, p := range pending {
		t, _ := e.reg.Lookup(p.TypeURL)
		if len(named) < maxNamed {
			named = append(named, t.ShortName()+" "+wire.QuoteName(p.Name))
		}
		perType[p.TypeURL]++
	}
	e.log.Warn("xDS watchers have not called done; reads from the server are held until they do",
		"server", c.server.URI, "after", e.slowWatcherThreshold, "notifications", notifications,
		"resources", len(pending), "first", strings.Join(named, ", "))
	for u, n := range perType {
		e.metrics.Add(metrics.Slow, n, c.server.URI, u)
	}
}

// startStreamLocked starts a stream that writes every watched type.
func (c *channel) startStreamLocked() {
	if c.closed || c.e.closed.Load() {
		return
	}
	e := c.e
	newStream := wire.NewSotW
	if c.delta {
		newStream = wire.NewDelta
	}
	c.host = &streamHost{c: c}
	for _, sn := range c.subscribed {
		sn.given, sn.handed = nil, false
	}
	c.stream = newStream(wire.Config{
		Host:                 c.host,
		Open:                 c.openStream,
		Goroutines:           &e.streamsRun,
		Types:                e.lookupType,
		ResolveName:          c.resolveName,
		Memo:                 c.memo,
		Switches:             e.switches,
		Server:               c.serverInfo,
		CertificateProviders: e.certificateProviders,
		Node:                 e.node,
		Clock:                e.clock,
		SlowWatcherThreshold: e.slowWatcherThreshold,
		Log:                  e.log,
	})
	for _, t := range c.subscribedTypesLocked() {
		c.stream.Changed(t)
	}
}

// stopStreamLocked ends the channel's stream, if any.
func (c *channel) stopStreamLocked() {
	if c.stream != nil {
		c.stream.Stop()
		c.stream, c.host = nil, nil
	}
}

// openStream opens an ADS stream on the channel's transport.
func (c *channel) openStream(ctx context.Context) (transport.Stream, error) {
	if c.transport == nil {
		return nil, c.buildErr
	}
	method := transport.ADSMethod
	if c.delta {
		method = transport.DeltaADSMethod
	}
	st, err := c.transport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	return transport.LimitReceive(st, c.e.maxResponseBytes), nil
}

// resolveName returns the cache key of a resource name.
func (c *channel) resolveName(typeURL, name string) (string, error) {
	_, key, err := c.e.resolveName(typeURL, name)
	if err != nil {
		return "", err.Err
	}
	return key, nil
}

// subscribedNames is a channel's sorted list of one type's names, the
// keys that may have joined or left it since, and what the stream was
// handed last.
type subscribedNames struct {
	// names is handed to the stream, which keeps it: replaced, never
	// modified.
	names []string
	// touched are the keys touched since, with repeats: an append per
	// Watch, where a set would hash and grow. Past len(names)+touchedSlack
	// keys the list is stale, rebuilt from the cache rather than merged.
	touched []string
	stale   bool
	// given is the list the current stream was handed last, if handed.
	given  []string
	handed bool
}

// touchedSlack bounds the touched keys beyond the list's length: merging
// more costs about a rebuild, and watches and cancels repeated while no
// request is built (in backoff) must not grow the list without end.
const touchedSlack = 1024

func (sn *subscribedNames) touch(key string) {
	switch {
	case sn.stale:
	case len(sn.touched) >= len(sn.names)+touchedSlack:
		sn.touched, sn.stale = nil, true
	default:
		sn.touched = append(sn.touched, key)
	}
}

// subscriptionLocked returns the names of a type the stream is to
// subscribe to now, with their changes since it was last handed them.
// Orphaned entries are left out and, on their active channel, deleted:
// the request about to be written unsubscribes them. A watch added to
// 10,000 names costs a merge of one name, not a rebuild.
func (c *channel) subscriptionLocked(typeURL string) wire.Subscription {
	sn := c.subscribed[typeURL]
	if sn == nil {
		sn = &subscribedNames{stale: true}
		c.subscribed[typeURL] = sn
	}
	var added, removed []string
	switch {
	case sn.stale:
		sn.names, sn.touched, sn.stale = c.collectNamesLocked(typeURL), sn.touched[:0], false
	case len(sn.touched) > 0:
		added, removed = c.changesLocked(typeURL, sn)
		clear(sn.touched)
		sn.touched = sn.touched[:0]
		old := sn.names
		sn.names = wire.MergeNames(old, added, removed)
		if !sn.handed || !sameSlice(sn.given, old) {
			added, removed = nil, nil
		}
	}
	sub := wire.Subscription{Names: sn.names, Version: c.versions[typeURL]}
	switch {
	case !sn.handed:
		sub.Added = sn.names
	case added != nil || removed != nil:
		sub.Added, sub.Removed = added, removed
	case !sameSlice(sn.given, sn.names):
		sub.Added, sub.Removed = wire.DiffNames(sn.given, sn.names)
	}
	if !sn.handed && c.delta {
		sub.Versions = c.resourceVersionsLocked(typeURL)
	}
	if len(sub.Added) > 0 {
		sub.Timeout = c.timerLocked().Timeout
		keys := c.e.keyLookup(typeURL)
		for _, name := range sub.Added {
			if _, en := keys.entry(name); en != nil && en.value == nil {
				sub.Awaited = append(sub.Awaited, name)
			}
		}
	}
	sn.given, sn.handed = sn.names, true
	return sub
}

// collectNamesLocked builds a type's list from the cache.
func (c *channel) collectNamesLocked(typeURL string) []string {
	n := 0 // a bound: orphaned entries are counted
	for a := range c.auths {
		n += len(a.resources[typeURL])
	}
	names := make([]string, 0, n)
	var gone []*entry
	for a := range c.auths {
		for name, en := range a.resources[typeURL] {
			if en.orphaned {
				if a.active() == c {
					gone = append(gone, en)
				}
				continue
			}
			names = append(names, name)
		}
	}
	for _, en := range gone {
		c.e.removeEntryLocked(en)
	}
	wire.SortNames(names)
	return names
}

// changesLocked tells which touched names joined the list and which left
// it: a sort of them and a binary search of each, k log n for k names
// rather than a walk of all n.
func (c *channel) changesLocked(typeURL string, sn *subscribedNames) (added, removed []string) {
	wire.SortNames(sn.touched)
	var gone []*entry
	for _, key := range slices.Compact(sn.touched) {
		member := false
		switch en := c.entryLocked(typeURL, key); {
		case en == nil:
		case en.orphaned:
			if en.auth.active() == c {
				gone = append(gone, en)
			}
		default:
			member = true
		}
		_, listed := slices.BinarySearch(sn.names, key)
		switch {
		case member && !listed:
			added = append(added, key)
		case !member && listed:
			removed = append(removed, key)
		}
	}
	for _, en := range gone {
		c.e.removeEntryLocked(en)
	}
	return added, removed
}

// entryLocked finds a cache key among the channel's authorities.
func (c *channel) entryLocked(typeURL, key string) *entry {
	for a := range c.auths {
		if en := a.resources[typeURL][key]; en != nil {
			return en
		}
	}
	return nil
}

// subscribedTypesLocked lists the types with at least one watched name.
func (c *channel) subscribedTypesLocked() []string {
	var types []string
	for a := range c.auths {
		for t, byName := range a.resources {
			if len(byName) > 0 && !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	slices.Sort(types)
	return types
}

// resourceVersionsLocked returns the versions of a type's resources
// cached from this server, for an incremental stream's first request
// (of a glob collection, its members').
func (c *channel) resourceVersionsLocked(typeURL string) map[string]string {
	var versions map[string]string
	for a := range c.auths {
		for key, en := range a.resources[typeURL] {
			if en.orphaned || en.value == nil || en.source != c {
				continue
			}
			if versions == nil {
				versions = make(map[string]string)
			}
			if en.glob.AddVersions(versions) {
				continue
			}
			if en.version != "" {
				versions[key] = en.version
			}
		}
	}
	return versions
}

// timerLocked is the does-not-exist timer of resources from this server.
func (c *channel) timerLocked() features.Timer {
	t := c.features.ResourceTimer(features.DefaultTimer)
	if c.e.cfg.ResourceTimeout > 0 {
		t.Timeout = c.e.cfg.ResourceTimeout
	}
	return t
}

// sameSlice reports whether a and b are the same slice (the same array,
// the same length): a list handed to a stream is replaced, never changed.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
