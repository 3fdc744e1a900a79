package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
)

// Glob collections (xRFC TP1): a watch of "xdstp://a/type/path/*" is one
// cache entry, subscribed by that name; the server answers with the
// members, "xdstp://a/type/path/<id>", which nobody watches by name. Each
// member that arrives, or is removed, updates the collection's member set;
// once a response is applied, each collection it touched is delivered
// anew, as a *registry.GlobCollection.

// globEntryLocked returns the watched glob collection key is a member of,
// or nil.
func (e *Engine) globEntryLocked(typeURL, key string) *entry {
	gk, ok := xdsname.GlobOf(key)
	if !ok {
		return nil
	}
	_, ge := e.lookupEntryLocked(typeURL, gk)
	return ge
}

// applyMemberLocked records a member's new value, or its removal (value
// nil), for delivery when the response is finished. It reports whether
// key is a member of a watched collection.
func (c *channel) applyMemberLocked(typeURL, key string, value registry.Resource, version string, resErr error) bool {
	ge := c.e.globEntryLocked(typeURL, key)
	if ge == nil {
		return false
	}
	if ge.glob == nil {
		ge.glob = &globMembers{}
	}
	gm := ge.glob
	if ge.source != nil && ge.source != c {
		// Another server (a fallback, or the primary back): its members
		// are the collection now, not a union with the last server's.
		gm.members, gm.memberVersions = nil, nil
		ge.source = c
	}
	switch {
	case resErr != nil:
		// The member's last good value stays; the collection's watchers
		// hear why it did not change.
		gm.memberErr = fmt.Errorf("invalid member %s: %w", wire.QuoteName(key), resErr)
	case value == nil:
		if _, had := gm.members[key]; !had {
			return true
		}
		delete(gm.members, key)
		delete(gm.memberVersions, key)
	default:
		if version != "" {
			if gm.memberVersions == nil {
				gm.memberVersions = make(map[string]string)
			}
			gm.memberVersions[key] = version
		}
		if old, had := gm.members[key]; had && resourcesEqual(old, value) {
			return true
		}
		if gm.members == nil {
			gm.members = make(map[string]registry.Resource)
		}
		gm.members[key] = value
	}
	if c.globsTouched == nil {
		c.globsTouched = make(map[*entry]bool)
	}
	c.globsTouched[ge] = true
	return true
}

// deliverGlobsLocked delivers the collections the response changed.
func (c *channel) deliverGlobsLocked(version string, received time.Time, gate *wire.Gate) {
	e := c.e
	touched := make([]*entry, 0, len(c.globsTouched))
	for ge := range c.globsTouched {
		touched = append(touched, ge)
	}
	c.globsTouched = nil
	slices.SortFunc(touched, func(a, b *entry) int { return strings.Compare(a.name, b.name) })
	for _, ge := range touched {
		if ge.watchers == nil && ge.orphaned {
			continue
		}
		gm := ge.glob
		if err := gm.memberErr; err != nil {
			gm.memberErr = nil
			nack := e.newError(KindNACK, codes.InvalidArgument, ge, c, err)
			ge.setAmbient(nack)
			e.notifyAmbientLocked(ge, nack, gate)
			continue
		}
		names := make([]string, 0, len(gm.members))
		for n := range gm.members {
			names = append(names, n)
		}
		slices.Sort(names)
		coll := &registry.GlobCollection{Name: ge.name, Members: make([]registry.GlobMember, len(names))}
		for i, n := range names {
			coll.Members[i] = registry.GlobMember{Name: n, Resource: gm.members[n]}
		}
		ge.version, ge.updated, ge.state, ge.source = version, received, StateACKed, c
		ge.fail = nil
		ge.value = coll
		e.notifyChangedLocked(ge, coll, nil, gate)
	}
}
