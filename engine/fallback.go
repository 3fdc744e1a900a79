package engine

import "google.golang.org/grpc/codes"

// maybeFallbackLocked walks an authority's server list past its active,
// failing server: each next server is connected and given every watched
// resource of the authority, until one is not known to be failing. It
// reports whether such a server was found.
func (e *Engine) maybeFallbackLocked(a *authority) bool {
	if e.switches.DisableFallback || len(a.channels) >= len(a.servers) {
		return false
	}
	st := FallbackState{Authority: a.name, Server: a.active().server.URI, Next: a.servers[len(a.channels)].URI,
		ReachabilityOnly: a.reachabilityOnly}
	for _, byName := range a.resources {
		for _, en := range byName {
			switch {
			case en.orphaned:
			case en.value != nil:
				st.Cached++
			case en.state == StateRequested:
				st.Uncached++
			}
		}
	}
	if !e.fallback.ShouldFallback(st) {
		return false
	}
	for len(a.channels) < len(a.servers) {
		from := a.active()
		c := e.channelLocked(a.servers[len(a.channels)])
		c.auths[a] = struct{}{}
		a.channels = append(a.channels, c)
		e.shapeGen++
		e.activeGen++
		e.log.Warn("xDS fallback", "authority", a.displayName(), "from", from.server.URI, "to", c.server.URI)
		for typeURL := range a.resources {
			c.typeChangedLocked(typeURL)
		}
		if c.buildErr != nil && c.status == nil {
			c.status = e.newError(KindConnectivity, codes.Unavailable, nil, c, c.buildErr)
		}
		if c.status == nil {
			return true
		}
	}
	return false
}
