package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/sharedtransport"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// channel is the engine's connection to one xDS server, shared by the
// authorities that list it. Its accepted versions and decode memo outlive
// streams; a fallback server, another channel, starts from none.
type channel struct {
	e         *Engine
	server    bootstrap.ServerConfig
	key       string
	info      registry.ServerInfo // its features, and whether it speaks incremental ADS
	timer     features.Timer      // its does-not-exist timer
	transport transport.Transport // shared (Engine.Transport)
	buildErr  error
	memo      *wire.Memo

	auths      map[*authority]struct{}
	subscribed map[string]*nameList // by type: the names handed to streams
	versions   map[string]string    // type URL → last accepted version_info
	status     *Error               // the connectivity failure watchers were told of, until a response (A57)
	connected  bool                 // healthy since the last connectivity failure (A78; see quietLocked)
	// answeredOnce: a response came from the server, on any stream.
	answeredOnce bool
	// reconnected: an incremental server answered after a connectivity
	// failure; what it did not re-send has its error cleared once applied.
	reconnected bool
	// applyMark is the mark of the response being applied, which the
	// entries it names take (entry.coveredBy); applyCovered counts them.
	applyMark    uint64
	applyCovered int
	globsTouched map[*entry]bool // the collections the response changed (glob.go)
	stream       wire.Stream
	host         *streamHost // the stream's; calls of another are stale
	retries      int         // consecutive streams that failed without a response
	stopRetry    func() bool // pending backoff timer
	closed       bool
}

func (e *Engine) channelLocked(s bootstrap.ServerConfig) *channel {
	key := sharedtransport.Key(s)
	if c, ok := e.channels[key]; ok {
		return c
	}
	info, ignored := serverInfo(s, e.known)
	c := &channel{e: e, server: s, key: key, info: info, timer: serverTimer(info.Features, e.cfg.ResourceTimeout),
		memo: wire.NewMemo(), auths: make(map[*authority]struct{}), subscribed: make(map[string]*nameList),
		versions: make(map[string]string)}
	// Unknown names are ignored (gRFC A27), so a typo is silent: say at
	// DEBUG what each server's features came to.
	e.log.Debug("xDS server features", "server", s.URI, "active", info.Features.Names(), "ignored", ignored)
	c.transport, c.buildErr = e.transports.Acquire(key, s)
	e.channels[key] = c
	return c
}

// typeChangedLocked has a type's names listed afresh for the stream: an
// authority came or went.
func (c *channel) typeChangedLocked(typeURL string) {
	if sn := c.subscribed[typeURL]; sn != nil {
		sn.markStale()
	}
	c.wakeStreamLocked(typeURL)
}

// nameChangedLocked tells the stream that a key may have joined or left
// the type's names: a watch made or revived its entry, or its last went.
func (c *channel) nameChangedLocked(typeURL, key string) {
	if sn := c.subscribed[typeURL]; sn != nil {
		sn.touch(key)
	}
	c.wakeStreamLocked(typeURL)
}

// wakeStreamLocked has the stream write the type's subscriptions,
// starting one if none is running or in backoff.
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

// endedLocked handles the end of the stream (A57): one that saw a response
// is replaced at once, backoff reset; one that saw none is a connectivity
// failure, reported (or answered by fallback) and retried after backoff.
// A response too large to read fails it whatever came before: a retry at
// once would get it again.
func (c *channel) endedLocked(err error, sawResponse bool) {
	c.stream, c.host = nil, nil
	if c.closed || c.e.closed.Load() {
		return
	}
	var tooLarge *transport.ResponseTooLargeError
	switch {
	case errors.Is(err, wire.ErrNewStream):
		// Not a failure: the stream ended itself to be replaced.
		c.startStreamLocked()
		return
	case errors.As(err, &tooLarge):
		c.e.metrics.add(countTooLarge, 1, c.server.URI, "")
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
// each authority it is active for, falls back or tells the watchers (A88
// errors: ambient where cached). A successful fallback shows them nothing.
func (c *channel) onServerFailureLocked(cause *Error) {
	wasHealthy := c.status == nil
	c.connected, c.status = false, cause
	if wasHealthy {
		c.e.log.Warn("xDS server unreachable", "server", c.server.URI, "error", cause.Err)
		c.e.metrics.add(countFailures, 1, c.server.URI, "")
	}
	for _, a := range c.authsLocked(true) {
		if c.e.maybeFallbackLocked(a) {
			continue
		}
		if wasHealthy && !c.e.storeHoldsLocked() {
			c.e.useStoreLocked(a, false)
			c.e.notifyChannelErrorLocked(a, c)
			c.e.notifyWildcardsLocked(a, cause)
		}
	}
}

// receivedLocked runs on every response, readable or not: the server is
// reachable, and becomes the active server of each authority that lists
// it, releasing lower-priority ones at once (A71).
func (c *channel) receivedLocked() {
	c.connected, c.answeredOnce = true, true
	if c.status != nil {
		c.status = nil
		c.e.log.Info("xDS server reachable again", "server", c.server.URI)
		c.reconnected = c.info.Delta // what it updates, the update tells
		for _, a := range c.authsLocked(true) {
			c.e.notifyWildcardsLocked(a, nil)
		}
	}
	for _, a := range c.authsLocked(false) {
		first := !a.answered
		a.answered = true
		if i := slices.Index(a.channels, c); i >= 0 && i < len(a.channels)-1 {
			lower := a.channels[i+1:]
			a.channels = a.channels[:i+1]
			for _, l := range lower {
				c.e.log.Info("xDS fallback ended: primary is back", "authority", a.displayName(), "server", c.server.URI, "released", l.server.URI)
				l.releaseLocked(a)
			}
		}
		if first && c.e.storeSide != nil {
			delete(c.e.storeSide.loaded, a)
			if a.active() == c {
				c.e.storeAnsweredLocked(a, c)
			}
		}
	}
}

// quietLocked: requests of these types went unanswered for the quiet
// window (Config.QuietWindow) on a stream that stays open. From a server
// that has answered before, that silence says it has nothing new for
// them: the stream counts as healthy (a connectivity failure is over, and
// what it sent before is current), and the wildcards of those types are
// answered. A server that never answered has said nothing yet: only a
// response counts (so a silent server is one the store serves for).
func (c *channel) quietLocked(typeURLs []string) {
	if !c.answeredOnce {
		return
	}
	c.connected = true
	if c.status != nil {
		c.status = nil
		c.e.log.Info("xDS server reachable again: its stream is open, with nothing new to send", "server", c.server.URI)
		for _, a := range c.authsLocked(true) {
			c.e.notifyWildcardsLocked(a, nil)
		}
		c.clearConnectivityErrorsLocked()
	}
	if a := c.e.auths.oldStyle; a.active() == c {
		for _, typeURL := range typeURLs {
			for _, ww := range a.wildcards[typeURL] {
				c.e.scheduleLocked(&notice{h: &watch{w: wildcardEntry{ww, ""}}, isAmbient: true})
			}
		}
	}
}

// clearConnectivityErrorsLocked tells the watchers of resources cached
// from this incremental server that it is back. A SotW server re-sends
// every resource, which clears the error; a delta server leaves out what
// initial_resource_versions showed unchanged, and its silence confirms it.
func (c *channel) clearConnectivityErrorsLocked() {
	c.reconnected = false
	for _, a := range c.authsLocked(true) {
		for en := range a.entries() {
			if en.source == c && en.value != nil && KindOf(en.notes.ambientError()) == KindConnectivity {
				en.notes = en.notes.withAmbient(nil)
				c.e.notifyAmbientLocked(en, nil)
			}
		}
	}
}

// authsLocked returns the channel's authorities (activeOnly: those it is
// active for), sorted by name.
func (c *channel) authsLocked(activeOnly bool) []*authority {
	out := make([]*authority, 0, len(c.auths))
	for a := range c.auths {
		if !activeOnly || a.active() == c {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y *authority) int { return cmp.Compare(x.name, y.name) })
	return out
}

// releaseLocked removes an authority; a channel left unused shuts down,
// its stream ending without an unsubscription, as gRPC's does.
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

// channelErrorFor is the error en's watchers are told while c, its
// authority's active server, fails, or has not answered within
// Config.StoreWait and the store serves en.
func (e *Engine) channelErrorFor(c *channel, en *entry) *Error {
	var err Error
	if c.status != nil {
		err = *c.status
	} else {
		err = *e.newError(KindConnectivity, codes.Unavailable, nil, c,
			fmt.Errorf("no response from the xDS server within %v (Config.StoreWait)", e.storeWait))
	}
	err.TypeURL, err.Name = en.typ.TypeURL, en.name
	if sv := en.storedOrigin(); sv != nil {
		err.Err = fmt.Errorf("using the resource from the last-known-good store (Config.Store), received from %s at %s: %w",
			sv.server.URI, sv.received.UTC().Format(time.RFC3339), err.Err)
	}
	return &err
}

// notifyChannelErrorLocked tells the authority's watchers that its server
// is unreachable; the cache state does not change (A88).
func (e *Engine) notifyChannelErrorLocked(a *authority, c *channel) {
	for en := range a.entries() {
		if len(en.watchers) > 0 {
			e.notifyErrorLocked(en, e.channelErrorFor(c, en))
		}
	}
}
