package engine

import (
	"context"
	"maps"
	"slices"

	"github.com/xdsengine/xdsengine/engine/internal/sharedtransport"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// streamNames answers a stream's questions about types and names
// (wire.Names): both are fixed in New, so no lock is taken.
type streamNames struct{ e *Engine }

func (n streamNames) Type(typeURL string) (*registry.ResourceType, bool) {
	return n.e.types.lookup(typeURL)
}

func (n streamNames) Key(typeURL, name string) (string, error) { return n.e.auths.key(typeURL, name) }

// streamHost is a channel's side of one of its streams (wire.Host),
// called from the stream's goroutines; each call takes the engine's
// lock, and is ignored once the channel has moved on to another stream.
type streamHost struct{ c *channel }

// locked runs f with the engine's lock held, if h is still its channel's host.
func (h *streamHost) locked(f func(c *channel)) {
	h.c.e.mu.Lock()
	defer h.c.e.mu.Unlock()
	if h.c.host == h && !h.c.closed {
		f(h.c)
	}
}

func (h *streamHost) Subscription(typeURL string) (sub wire.Subscription) {
	h.locked(func(c *channel) { sub = c.subscriptionLocked(typeURL) })
	return sub
}

// Apply applies a part with its response's gate as the engine's (see
// notify.go); the stream holds its decode memo meanwhile, which the
// engine touches only through p's resources (Resource.Keep).
func (h *streamHost) Apply(p wire.Part) {
	h.locked(func(c *channel) {
		c.e.gate = p.Gate
		defer func() { c.e.gate = nil }()
		c.applyLocked(p)
	})
}

func (h *streamHost) Timeout(typeURL string, names []string) {
	h.locked(func(c *channel) {
		for _, name := range names {
			if _, en := c.e.lookupEntryLocked(typeURL, name); en != nil {
				c.e.onTimerLocked(en, c)
			}
		}
	})
}

func (h *streamHost) Ended(err error, sawResponse bool) {
	h.locked(func(c *channel) { c.endedLocked(err, sawResponse) })
}

func (h *streamHost) Quiet(typeURLs []string) {
	h.locked(func(c *channel) { c.quietLocked(typeURLs) })
}

// SlowWatchers counts the resources whose watchers have not called done;
// the stream has logged them.
func (h *streamHost) SlowWatchers(perType map[string]int) {
	for u, n := range perType {
		h.c.e.metrics.add(countSlow, n, h.c.server.URI, u)
	}
}

func (c *channel) startStreamLocked() {
	if c.closed || c.e.closed.Load() {
		return
	}
	e := c.e
	newStream := wire.NewSotW
	if c.info.Delta {
		newStream = wire.NewDelta
	}
	c.host = &streamHost{c: c}
	for _, sn := range c.subscribed {
		sn.newStream()
	}
	c.stream = newStream(wire.Config{Host: c.host, Names: streamNames{e}, Goroutines: &e.streamsRun, Memo: c.memo,
		DecodeOptions: registry.DecodeOptions{Server: c.info, Switches: e.switches, CertificateProviders: e.certificateProviders},
		Node:          e.node, Clock: e.clock, SlowWatcherThreshold: e.slowWatcherThreshold, QuietWindow: e.quietWindow, Log: e.log})
	for _, t := range c.subscribedTypesLocked() {
		c.stream.Changed(t)
	}
}

func (c *channel) stopStreamLocked() {
	if c.stream != nil {
		c.stream.Stop()
		c.stream, c.host = nil, nil
	}
}

// Open opens the stream on the channel's shared transport. The channel's
// transport is set when it is made, and never changes.
func (h *streamHost) Open(ctx context.Context) (transport.Stream, error) {
	c := h.c
	if c.transport == nil {
		return nil, c.buildErr
	}
	return sharedtransport.Open(ctx, c.transport, c.info.Delta, c.e.maxResponseBytes)
}

// subscriptionLocked returns the names of a type the stream is to
// subscribe to now, with their changes since it was last handed them.
// Orphaned entries are left out and, on their active channel, deleted:
// the request about to be written unsubscribes them.
func (c *channel) subscriptionLocked(typeURL string) wire.Subscription {
	sn := c.subscribed[typeURL]
	if sn == nil {
		sn = &nameList{}
		c.subscribed[typeURL] = sn
	}
	var gone []*entry
	sn.refresh(func() []string { return c.collectNamesLocked(typeURL) }, func(key string) bool {
		if en := c.entryLocked(typeURL, key); en != nil {
			return c.listedLocked(en, &gone)
		}
		return key == wildcardName && c.wildcardLocked(typeURL)
	})
	for _, en := range gone {
		c.e.removeEntryLocked(en)
	}
	sub := wire.Subscription{Version: c.versions[typeURL], Wildcard: c.wildcardLocked(typeURL)}
	var first bool
	sub.Names, sub.Added, sub.Removed, first = sn.next()
	if first && c.info.Delta {
		sub.Versions = c.resourceVersionsLocked(typeURL)
	}
	if len(sub.Added) > 0 {
		sub.Timeout = c.timer.Timeout
		keys := c.e.keysLocked(typeURL)
		for i, name := range sub.Added {
			if _, en := keys.entry(name); en != nil && en.awaited() {
				if sub.Awaited == nil {
					// A burst of watches awaits nearly all it adds: the
					// list is made once rather than grown.
					sub.Awaited = make([]string, 0, len(sub.Added)-i)
				}
				sub.Awaited = append(sub.Awaited, name)
			}
		}
	}
	return sub
}

func (c *channel) collectNamesLocked(typeURL string) []string {
	n := 0 // a bound: orphaned entries are counted
	for a := range c.auths {
		n += len(a.resources[typeURL])
	}
	names := make([]string, 0, n)
	var gone []*entry
	for a := range c.auths {
		for name, en := range a.resources[typeURL] {
			if c.listedLocked(en, &gone) {
				names = append(names, name)
			}
		}
	}
	if c.wildcardLocked(typeURL) {
		names = append(names, wildcardName)
	}
	for _, en := range gone {
		c.e.removeEntryLocked(en)
	}
	return names
}

// listedLocked reports whether en's name is in the channel's list of its
// type (see subscriptionLocked); an orphaned entry is not, and joins gone
// on its active channel.
func (c *channel) listedLocked(en *entry, gone *[]*entry) bool {
	if en.orphaned {
		if en.auth.active() == c {
			*gone = append(*gone, en)
		}
		return false
	}
	return en.named()
}

func (c *channel) entryLocked(typeURL, key string) *entry {
	for a := range c.auths {
		if en := a.resources[typeURL][key]; en != nil {
			return en
		}
	}
	return nil
}

// wildcardLocked reports whether an authority of the channel has a
// wildcard of the type.
func (c *channel) wildcardLocked(typeURL string) bool {
	for a := range c.auths {
		if len(a.wildcards[typeURL]) > 0 {
			return true
		}
	}
	return false
}

// subscribedTypesLocked returns the types the channel's authorities
// watch, sorted. (An authority holds no empty map of a type's entries or
// wildcards: the last to go deletes it.)
func (c *channel) subscribedTypesLocked() []string {
	var types []string
	for a := range c.auths {
		types = slices.AppendSeq(types, maps.Keys(a.resources))
		types = slices.AppendSeq(types, maps.Keys(a.wildcards))
	}
	slices.Sort(types)
	return slices.Compact(types)
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
			if en.glob.addVersions(versions) {
				continue
			}
			if en.version != "" {
				versions[key] = en.version
			}
		}
	}
	return versions
}
