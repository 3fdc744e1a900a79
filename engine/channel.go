package engine

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/engine/internal/transports"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// channel is the engine's connection to one xDS server, shared by every
// authority that lists the server. Its accepted version per type and its
// decode memo outlive streams; a fallback server, being another channel,
// starts from none.
type channel struct {
	e          *Engine
	server     bootstrap.ServerConfig
	key        string
	features   features.Set
	serverInfo registry.ServerInfo
	transport  transport.Transport // shared (Engine.Transport)
	buildErr   error
	memo       *wire.Memo

	auths map[*authority]struct{}
	// subscribed keeps, per type, the sorted names handed to streams, so
	// that an ACK costs no walk of the cache and no sort, and a watch
	// added or cancelled costs a merge rather than a rebuild.
	subscribed map[string]*subscribedNames
	versions   map[string]string // type URL → last accepted version_info
	// status is non-nil from a connectivity failure until the next
	// response: the error watchers were told (A57).
	status *Error
	// connected: a stream has received a response since the last
	// connectivity failure (A78's grpc.xds_client.connected).
	connected bool

	// delta: the server speaks incremental ADS (features.NameDeltaXDS).
	delta bool
	// reconnected: an incremental server answered after a connectivity
	// failure; the connectivity errors of what it did not re-send are
	// cleared after the response is applied.
	reconnected bool
	// The response being applied: the engine's shapeGen and activeGen
	// when it began, how many of the entries of the authorities this
	// channel serves it has named so far, and the mark it gives them
	// (entry.coveredBy). If it named them all and nothing changed
	// meanwhile, it deletes nothing; otherwise the entries it did not mark
	// are its deletions.
	applyingShape, applyingActive uint64
	applyingCovered               int
	applyingMark                  uint64
	// order is, per type, the entries of the last response's resources
	// in the order they came, and nextOrder the response's being applied:
	// where the next response's resources most likely are.
	order     map[string][]*entry
	nextOrder []*entry
	// globsTouched are the glob collections the response being applied
	// changed (glob.go).
	globsTouched map[*entry]bool
	stream       wire.Stream
	host         *streamHost // the stream's; calls of another are stale
	retries      int         // consecutive streams that failed without a response
	stopRetry    func() bool // pending backoff timer
	closed       bool
}

// channelLocked returns the channel for a server, creating it (and its
// transport) on first use.
func (e *Engine) channelLocked(s bootstrap.ServerConfig) *channel {
	key := transports.Key(s)
	if c, ok := e.channels[key]; ok {
		return c
	}
	fs := features.Resolve(s.ServerFeatures, e.known...)
	c := &channel{
		e:          e,
		server:     s,
		key:        key,
		features:   fs,
		delta:      s.Delta || fs.Has(features.NameDeltaXDS),
		memo:       wire.NewMemo(),
		auths:      make(map[*authority]struct{}),
		subscribed: make(map[string]*subscribedNames),
		versions:   make(map[string]string),
		order:      make(map[string][]*entry),
	}
	c.serverInfo = registry.ServerInfo{URI: s.URI, Features: fs, Delta: c.delta}
	var ignored []string
	for _, n := range s.ServerFeatures {
		if !fs.Has(n) {
			ignored = append(ignored, n)
		}
	}
	// Unknown names must be ignored (gRFC A27), which makes a typo silent:
	// say at DEBUG what each server's features came to.
	e.log.Debug("xDS server features", "server", s.URI, "active", fs.Names(), "ignored", ignored)
	c.transport, c.buildErr = e.transports.Acquire(key, s)
	e.channels[key] = c
	return c
}

// typeChangedLocked is called when the set of names of a type subscribed
// on this channel may have changed in any way (an authority came or
// went): the list is built afresh.
func (c *channel) typeChangedLocked(typeURL string) {
	if sn := c.subscribed[typeURL]; sn != nil {
		sn.stale = true
	}
	c.wakeStreamLocked(typeURL)
}

// nameChangedLocked is called when one name (a cache key) of a type may
// have joined or left the channel's subscriptions: a watch created or
// revived its entry, or its last watch was cancelled.
func (c *channel) nameChangedLocked(typeURL, key string) {
	if sn := c.subscribed[typeURL]; sn != nil {
		sn.touch(key)
	}
	c.wakeStreamLocked(typeURL)
}

// wakeStreamLocked has the channel's stream write typeURL's subscriptions,
// starting a stream if none is running or waiting out a backoff.
func (c *channel) wakeStreamLocked(typeURL string) {
	if c.closed {
		return
	}
	switch {
	case c.stream != nil:
		c.stream.Changed(typeURL)
	case c.stopRetry == nil:
		c.startStreamLocked()
	}
}

// endedLocked handles the end of the channel's stream (A57): a stream
// that saw a response ended normally and is replaced at once with backoff
// reset; one that saw none is a connectivity failure, reported to
// watchers (or answered by fallback) and retried after backoff. A
// response too large to read is a failure of the server whatever came
// before it: the same response would arrive again on an immediate retry.
func (c *channel) endedLocked(err error, sawResponse bool) {
	c.stream, c.host = nil, nil
	if c.closed || c.e.closed.Load() {
		return
	}
	var tooLarge *transport.ResponseTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		c.e.metrics.Add(metrics.TooLarge, 1, c.server.URI, "")
		c.onServerFailureLocked(c.e.newError(KindResponseTooLarge, codes.ResourceExhausted, nil, c, tooLarge))
	case sawResponse:
		c.retries = 0
		c.e.log.Info("xDS stream closed after responses; reconnecting", "server", c.server.URI, "error", err)
		if len(c.subscribedTypesLocked()) > 0 {
			c.startStreamLocked()
		}
		return
	default:
		c.onServerFailureLocked(c.e.newError(KindConnectivity, codes.Unavailable, nil, c,
			fmt.Errorf("xDS stream failed with no responses received: %w", err)))
	}
	if c.closed || len(c.subscribedTypesLocked()) == 0 {
		return
	}
	delay := c.e.backoff(c.retries)
	c.retries++
	c.e.log.Debug("xDS stream retry scheduled", "server", c.server.URI, "in", delay)
	c.stopRetry = c.e.clock.AfterFunc(delay, func() {
		c.e.mu.Lock()
		defer c.e.mu.Unlock()
		c.stopRetry = nil
		if c.stream == nil && len(c.subscribedTypesLocked()) > 0 {
			c.startStreamLocked()
		}
	})
}

// onServerFailureLocked records that the server cannot be used and, for
// each authority using it as its active server, falls back or tells the
// watchers: an ambient error where a resource is cached, a changed error
// where none is (A88). A successful fallback shows them nothing.
func (c *channel) onServerFailureLocked(cause *Error) {
	wasHealthy := c.status == nil
	c.connected = false
	c.status = cause
	if wasHealthy {
		c.e.log.Warn("xDS server unreachable", "server", c.server.URI, "error", cause.Err)
		c.e.metrics.Add(metrics.Failures, 1, c.server.URI, "")
	}
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		if c.e.maybeFallbackLocked(a) {
			continue
		}
		if wasHealthy {
			c.e.notifyChannelErrorLocked(a, c)
		}
	}
}

// receivedLocked runs on every response, readable or not: the server is
// reachable, and per A71 it becomes the active server of each authority
// that listed it, whose lower-priority servers are released at once.
func (c *channel) receivedLocked() {
	c.connected = true
	if c.status != nil {
		c.status = nil
		c.e.log.Info("xDS server reachable again", "server", c.server.URI)
		// Cleared once the response is applied: what it updates is
		// told by the update itself.
		c.reconnected = c.delta
	}
	for _, a := range c.authsSortedLocked() {
		i := slices.Index(a.channels, c)
		if i < 0 || i == len(a.channels)-1 {
			continue
		}
		lower := a.channels[i+1:]
		a.channels = a.channels[:i+1]
		c.e.shapeGen++
		c.e.activeGen++
		for _, l := range lower {
			c.e.log.Info("xDS fallback ended: primary is back", "authority", a.displayName(), "server", c.server.URI, "released", l.server.URI)
			l.releaseLocked(a)
		}
	}
}

// clearConnectivityErrorsLocked tells the watchers of resources cached
// from this incremental server that it is reachable again. A SotW server
// re-sends every resource on a new stream, which clears the error; a delta
// server does not send what initial_resource_versions showed unchanged,
// and its silence is that confirmation.
func (c *channel) clearConnectivityErrorsLocked(gate *wire.Gate) {
	c.reconnected = false
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		for _, byName := range a.resources {
			for _, en := range byName {
				if en.source == c && en.value != nil && KindOf(en.ambientError()) == KindConnectivity {
					en.setAmbient(nil)
					c.e.notifyAmbientLocked(en, nil, gate)
				}
			}
		}
	}
}

func (c *channel) authsSortedLocked() []*authority {
	out := make([]*authority, 0, len(c.auths))
	for a := range c.auths {
		out = append(out, a)
	}
	slices.SortFunc(out, func(x, y *authority) int {
		switch {
		case x.name < y.name:
			return -1
		case x.name > y.name:
			return 1
		}
		return 0
	})
	return out
}

// releaseLocked removes an authority; a channel no authority uses is shut
// down: its stream ends without an unsubscription, as gRPC does.
func (c *channel) releaseLocked(a *authority) {
	delete(c.auths, a)
	if len(c.auths) > 0 {
		for t := range a.resources {
			c.typeChangedLocked(t)
		}
		return
	}
	if c.e.channels[c.key] == c {
		delete(c.e.channels, c.key)
	}
	c.shutdownLocked()
}

// shutdownLocked ends the stream and retries, and gives the transport
// back.
func (c *channel) shutdownLocked() {
	if c.closed {
		return
	}
	c.closed = true
	if c.stopRetry != nil {
		c.stopRetry()
		c.stopRetry = nil
	}
	c.stopStreamLocked()
	c.e.transports.Release(c.key)
}

// channelErrorFor is the connectivity error as one resource's watchers see it.
func (e *Engine) channelErrorFor(c *channel, en *entry) *Error {
	err := *c.status
	err.TypeURL = en.typ.TypeURL
	err.Name = en.name
	return &err
}

// notifyChannelErrorLocked tells every watcher of the authority that its
// server is unreachable. The cache state does not change (A88).
func (e *Engine) notifyChannelErrorLocked(a *authority, c *channel) {
	for _, byName := range a.resources {
		for _, en := range byName {
			if len(en.watchers) == 0 {
				continue
			}
			e.notifyErrorLocked(en, e.channelErrorFor(c, en), nil)
		}
	}
}
