package relay

import (
	"reflect"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// stampTTL is how long the stamp of a map of returned resources is kept
// for its stream's next watch. A stream that ended leaves its stamp, and
// the stamp holds the map: this bounds what that costs.
const stampTTL = time.Minute

// stamp says that a map of returned resources m is what its stream knows
// at version: it agrees with the cache then for every name, but those in
// extra. For a State of the World stream it keeps the subscription it was
// current for (the server replaces, not changes, that map).
type stamp struct {
	m          map[string]string
	key        uintptr
	version    uint64
	wildcard   bool
	subscribed map[string]struct{}
	extra      []string
	at         time.Time
	// ours: m was built by the cache (not the server, nor a request),
	// so it may be recycled once the server lets go of it. touched are
	// the names the server may have changed in m since (those of the
	// requests since), spare the map m replaced.
	ours    bool
	touched []string
	spare   *spareMap
}

// putStampLocked keeps st for its stream's next watch, for stampTTL.
func (c *servingCache) putStampLocked(st *stamp) {
	if st.m == nil {
		return // a subscription's first map may be nil; nothing to find it by
	}
	now := c.now()
	st.key, st.at = mapIdentity(st.m), now
	c.stamps[st.key] = st
	c.stampQueue = append(c.stampQueue, st)
	drop := 0
	for ; drop < len(c.stampQueue); drop++ {
		old := c.stampQueue[drop]
		if c.stamps[old.key] == old && now.Sub(old.at) < stampTTL {
			break
		}
		if c.stamps[old.key] == old {
			delete(c.stamps, old.key)
		}
		old.m, old.spare = nil, nil
	}
	c.stampQueue = c.stampQueue[drop:]
	if len(c.stampQueue) > 2*len(c.stamps)+minChangeLog {
		// Taken stamps left in the middle of the queue.
		live := c.stampQueue[:0]
		for _, st := range c.stampQueue {
			if c.stamps[st.key] == st {
				live = append(live, st)
			}
		}
		clear(c.stampQueue[len(live):])
		c.stampQueue = live
	}
}

// takeStampLocked returns the base of a new watch of sub: the stamp of
// its returned resources, with the names whose subscription changed since
// added to compare; nil if there is none, or the subscription changed
// from or to wildcard. changed are the names an incremental request
// (un)subscribed; a State of the World request states its whole
// subscription, compared with the stamp's.
func (c *servingCache) takeStampLocked(sub cache.Subscription, delta bool, changed []string) *stamp {
	m := sub.ReturnedResources()
	if m == nil {
		return nil
	}
	st := c.stamps[mapIdentity(m)]
	if st == nil {
		return nil
	}
	delete(c.stamps, st.key)
	spare := st.spare
	st.m, st.spare = nil, nil // the queue may hold st a while yet
	if st.wildcard != sub.IsWildcard() || st.version < c.floor {
		return nil
	}
	subscribed := sub.SubscribedResources()
	if !delta {
		changed = nil
		for name := range subscribed {
			if _, ok := st.subscribed[name]; !ok {
				changed = append(changed, name)
			}
		}
		for name := range st.subscribed {
			if _, ok := subscribed[name]; !ok {
				changed = append(changed, name)
			}
		}
	}
	return &stamp{m: m, version: st.version, wildcard: sub.IsWildcard(), subscribed: subscribed, ours: st.ours,
		extra: append(append([]string(nil), st.extra...), changed...), touched: append(append([]string(nil), st.touched...), changed...), spare: spare}
}

// mapIdentity tells maps apart: the server hands back the very map a
// response carried as the stream's returned resources, which is how a
// stamp is found. A stamp holds its map, so an identity is not reused
// while it is stamped.
func mapIdentity(m map[string]string) uintptr {
	return reflect.ValueOf(m).Pointer()
}
