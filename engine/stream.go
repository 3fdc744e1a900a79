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

// SubscriptionLocked returns, sorted, the names of a type this channel
// must subscribe to, and the version last accepted. Orphaned entries are
// left out and, when this is their authority's active channel, deleted:
// the request about to be written unsubscribes them.
func (c *channel) SubscriptionLocked(typeURL string) ([]string, string) {
	if names, ok := c.subscribed[typeURL]; ok {
		return names, c.versions[typeURL]
	}
	var names []string
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
	slices.Sort(names)
	c.subscribed[typeURL] = names
	return names, c.versions[typeURL]
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
	c.stream = wire.NewSotW(wire.Config{
		Host:                 c,
		Lock:                 &e.mu,
		Open:                 c.openStream,
		Goroutines:           &e.streamsRun,
		Applying:             &e.applying,
		Types:                e.lookupType,
		Switches:             e.switches,
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
	st, err := c.transport.NewStream(ctx, ADSMethod)
	if err != nil {
		return nil, err
	}
	return limitedStream{st, c.e.maxResponseBytes}, nil
}

// limitedStream enforces the receive limit over a transport that does
// not enforce it itself.
type limitedStream struct {
	Stream
	limit int
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
