package engine

import (
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine/internal/glob"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
)

// Glob collections (xRFC TP1): a watch of "xdstp://a/type/path/*" is one
// cache entry, subscribed by that name, whose members (package glob)
// arrive and go by their own names; once a response is applied, each
// collection it touched is delivered anew.

// applyMemberLocked records a member's new value, its removal (value
// nil) or error, for delivery when the response is finished, if key is a
// member of a watched collection.
func (c *channel) applyMemberLocked(typeURL, key string, value registry.Resource, version string, resErr error) {
	gk, ok := xdsname.GlobOf(key)
	if !ok {
		return
	}
	_, ge := c.e.lookupEntryLocked(typeURL, gk)
	if ge == nil {
		return
	}
	if ge.glob == nil {
		ge.glob = &glob.Members{}
	}
	if ge.source != nil && ge.source != c {
		ge.glob.Reset()
		ge.source = c
	}
	if !ge.glob.Update(key, value, version, resErr) {
		return
	}
	if c.globsTouched == nil {
		c.globsTouched = make(map[*entry]bool)
	}
	c.globsTouched[ge] = true
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
		if err := ge.glob.TakeErr(); err != nil {
			nack := e.newError(KindNACK, codes.InvalidArgument, ge, c, err)
			ge.setAmbient(nack)
			e.notifyAmbientLocked(ge, nack, gate)
			continue
		}
		coll := ge.glob.Collection(ge.name)
		ge.version, ge.updated, ge.state, ge.source = version, received, StateACKed, c
		ge.fail = nil
		ge.value = coll
		e.notifyChangedLocked(ge, coll, nil, gate)
	}
}
