package engine

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
)

// This file is the channel's side of its ADS stream (wire.Host): what to
// subscribe to, the does-not-exist timers' length and end, and watchers
// slow to call done. Applying responses is in apply.go; the stream's end
// and the server's health in channel.go.

// SubscriptionLocked returns the names of a type this channel must
// subscribe to, as changes to the list it handed over last, and the
// version last accepted. Orphaned entries are left out and, when this is
// their authority's active channel, deleted: the request about to be
// written unsubscribes them.
func (c *channel) SubscriptionLocked(typeURL string) (wire.Names, string) {
	sn := c.subscribed[typeURL]
	switch {
	case sn == nil:
		sn = &subscribedNames{names: c.collectNamesLocked(typeURL)}
		c.subscribed[typeURL] = sn
	case sn.stale:
		sn.names = c.collectNamesLocked(typeURL)
		sn.stale, sn.given = false, wire.Names{}
	default:
		if sn.given.Changed() {
			// The stream that was given them ended before it built the
			// list.
			sn.names = sn.given.List()
			sn.given = wire.Names{}
		}
		if len(sn.touched) > 0 {
			c.namesGen++
			sn.given = c.changesLocked(typeURL, sn)
			clear(sn.touched)
			sn.touched = sn.touched[:0]
			if sn.given.Changed() {
				return sn.given, c.versions[typeURL]
			}
		}
	}
	return wire.Names{Base: sn.names}, c.versions[typeURL]
}

// SubscriptionBuiltLocked takes the list a stream built from the changes
// it was given as the type's list.
func (c *channel) SubscriptionBuiltLocked(typeURL string, names wire.Names, list []string) {
	sn := c.subscribed[typeURL]
	if sn == nil || !sn.given.Changed() || sn.given.Gen != names.Gen {
		// Rebuilt from the cache since.
		return
	}
	sn.names, sn.given = list, wire.Names{}
}

// subscribedNames is a channel's sorted list of the names of one type,
// and the names that may have joined or left it since it was built.
type subscribedNames struct {
	// names is handed to the stream, which keeps it: never modified, only
	// replaced.
	names []string
	// given are the changes to names handed to the stream, until it hands
	// back the list it built from them.
	given wire.Names
	// touched are the keys touched since, in the order they were, with
	// repeats: an append per Watch, where a set would hash and grow. It
	// holds at most len(names)+touchedSlack keys; past that the list is
	// stale, and rebuilt from the cache rather than merged.
	touched []string
	stale   bool
}

// touchedSlack bounds the touched keys beyond the list's length: a merge
// of more costs about what a rebuild does, and watches and cancels
// repeated while no request is built (a stream in backoff) must not grow
// the list without end.
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

// changesLocked tells, of the touched names, which joined the list and
// which left it: a sort of the touched names and a binary search of each
// in the list, k log n for k names rather than a walk of all n.
func (c *channel) changesLocked(typeURL string, sn *subscribedNames) wire.Names {
	wire.SortNames(sn.touched)
	touched := slices.Compact(sn.touched)
	changes := wire.Names{Base: sn.names, Gen: c.namesGen}
	var gone []*entry
	for _, key := range touched {
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
			changes.Added = append(changes.Added, key)
		case !member && listed:
			changes.Removed = append(changes.Removed, key)
		}
	}
	for _, en := range gone {
		c.e.removeEntryLocked(en)
	}
	return changes
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

// SubscribedTypesLocked lists the types with at least one watched name.
func (c *channel) SubscribedTypesLocked() []string {
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

func (c *channel) startStreamLocked() {
	if c.closed || c.e.closed {
		return
	}
	e := c.e
	newStream := wire.NewSotW
	if c.delta {
		newStream = wire.NewDelta
	}
	c.stream = newStream(wire.Config{
		Host:                 c,
		Lock:                 &e.mu,
		Open:                 c.openStream,
		Goroutines:           &e.streamsRun,
		Callers:              &e.callers,
		Types:                e.lookupType,
		Switches:             e.switches,
		CertificateProviders: e.certificateProviders,
		Server:               c.serverInfo,
		Node:                 e.node,
		Clock:                e.clock,
		HashSeed:             e.hashSeed,
		SlowWatcherThreshold: e.slowWatcherThreshold,
		Log:                  e.log,
	})
	c.stream.Start()
}

// openStream opens an ADS stream on the channel's transport.
func (c *channel) openStream(ctx context.Context) (wire.RawStream, error) {
	if c.transport == nil {
		return nil, c.buildErr
	}
	method := ADSMethod
	if c.delta {
		method = DeltaADSMethod
	}
	st, err := c.transport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	limited := limitedStream{st, c.e.maxResponseBytes}
	if bs, ok := st.(BuffersSender); ok {
		return limitedBuffersStream{limited, bs}, nil
	}
	return limited, nil
}

// limitedStream enforces the receive limit over a transport that does
// not enforce it itself.
type limitedStream struct {
	Stream
	limit int
}

// limitedBuffersStream is a limitedStream that keeps its stream's
// SendBuffers, which the wrapping would hide.
type limitedBuffersStream struct {
	limitedStream
	BuffersSender
}

func (s limitedStream) Recv() ([]byte, error) {
	b, err := s.Stream.Recv()
	if err == nil && len(b) > s.limit {
		return nil, &ResponseTooLargeError{Size: len(b), Limit: s.limit}
	}
	return b, err
}

// TimerLocked reports whether a resource just subscribed needs a
// does-not-exist timer: only one nothing is cached for.
func (c *channel) TimerLocked(typeURL, name string) (time.Duration, bool) {
	if _, en := c.e.lookupEntryLocked(typeURL, name); en == nil || en.value != nil {
		return 0, false
	}
	return c.timerLocked().Timeout, true
}

// TimeoutLocked: a resource did not arrive in time.
func (c *channel) TimeoutLocked(typeURL, name string) {
	if _, en := c.e.lookupEntryLocked(typeURL, name); en != nil {
		c.e.onTimerLocked(en, c)
	}
}

// SlowWatchers logs the resources whose watchers have not called done,
// and counts the notifications per type.
func (c *channel) SlowWatchers(pending []wire.Pending, notifications int) {
	e := c.e
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
		t, _ := e.reg.Lookup(u)
		e.metrics.slowWatchers(c, t, n)
	}
}

// timerLocked is the does-not-exist timer for resources from this server.
func (c *channel) timerLocked() features.Timer {
	t := c.features.ResourceTimer(features.DefaultTimer)
	if c.e.cfg.ResourceTimeout > 0 {
		t.Timeout = c.e.cfg.ResourceTimeout
	}
	return t
}
