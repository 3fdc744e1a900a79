package relay

import "time"

// upstreamWild is a type's upstream wildcard subscription.
type upstreamWild struct {
	refs      int
	idleSince time.Time
	cancel    func()
	// resolved: the upstream has answered the subscription, so every
	// resource of the type is known, present or not.
	resolved bool
}

func (tc *typeCache) acquireWildLocked() {
	if tc.wild == nil {
		tc.wild = &upstreamWild{cancel: func() {}}
		tc.g.r.log.Warn("relay: wildcard subscriptions are not relayed yet; the client waits", "key", tc.g.key, "type", tc.typeURL)
	}
	tc.wild.refs++
}

func (tc *typeCache) releaseWildLocked(now time.Time) {
	tc.wild.refs--
	if tc.wild.refs == 0 {
		tc.wild.idleSince = now
	}
}
