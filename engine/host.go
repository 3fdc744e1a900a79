package engine

import (
	"context"
	"strings"

	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/transport"
)

// streamHost is a channel's side of one of its streams (wire.Host). The
// stream calls it from its own goroutines; each call takes the engine's
// lock, and is ignored once the channel has moved on to another stream.
// Applying responses is in apply.go, the subscriptions in subscribe.go.
type streamHost struct{ c *channel }

// current takes the engine's lock and reports whether h is still its
// channel's stream's host; if not, it has released the lock.
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
// and counts the notifications per type.
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

// startStreamLocked starts a stream to the channel's server, and has it
// write every type with a watched name.
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
