package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
)

// Glob collections (xRFC TP1): a watch of "xdstp://a/type/path/*" is
// answered with the members, "xdstp://a/type/path/<id>", which nobody
// watches by name: the response path records each member's news in its
// collection's entry (applyMemberLocked), and the collections a response
// changed are delivered once it is applied, in the order of their names,
// as a *registry.GlobCollection (deliverGlobsLocked).

// applyMemberLocked records, if key is a member of a watched glob
// collection (xRFC TP1: one entry, ".../*"), its new value, removal (value
// nil) or error; deliverGlobsLocked delivers the collections at the end.
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
		ge.glob = &globMembers{}
	}
	if ge.source != nil && ge.source != c {
		ge.glob.reset()
		ge.source = c
	}
	if !ge.glob.update(key, value, version, resErr) {
		return
	}
	if c.globsTouched == nil {
		c.globsTouched = make(map[*entry]bool)
	}
	c.globsTouched[ge] = true
}

func (c *channel) deliverGlobsLocked(version string, received time.Time) {
	e := c.e
	touched := slices.SortedFunc(maps.Keys(c.globsTouched), func(a, b *entry) int { return strings.Compare(a.name, b.name) })
	c.globsTouched = nil
	for _, ge := range touched {
		if ge.watchers == nil && ge.orphaned {
			continue
		}
		if err := ge.glob.takeErr(); err != nil {
			nack := e.newError(KindNACK, codes.InvalidArgument, ge, c, err)
			ge.notes = ge.notes.withAmbient(nack)
			e.notifyAmbientLocked(ge, nack)
			continue
		}
		coll := ge.glob.collection(ge.name)
		ge.version, ge.state, ge.source = version, StateACKed, c
		ge.setUpdated(received)
		ge.notes = nil
		ge.value = coll
		e.notifyChangedLocked(ge, coll, nil)
	}
}

// globMembers is one collection's members by name.
type globMembers struct {
	members map[string]registry.Resource
	// versions are the members' own versions (incremental xDS), for
	// initial_resource_versions: with them, a server tells a new stream
	// which members went away meanwhile.
	versions map[string]string
	// err is why the last response left a member unchanged.
	err error
}

// reset forgets the members: those of another server (a fallback, or the
// primary back) are the collection, not a union with the last server's.
func (m *globMembers) reset() { m.members, m.versions = nil, nil }

// update records a member's new value and version, its removal (value
// nil), or why its new value is invalid (err; its last good value stays).
// It reports whether the collection's watchers are to hear of it.
func (m *globMembers) update(key string, value registry.Resource, version string, err error) bool {
	switch {
	case err != nil:
		m.err = fmt.Errorf("invalid member %s: %w", wire.QuoteName(key), err)
	case value == nil:
		if _, had := m.members[key]; !had {
			return false
		}
		delete(m.members, key)
		delete(m.versions, key)
	default:
		if version != "" {
			if m.versions == nil {
				m.versions = make(map[string]string)
			}
			m.versions[key] = version
		}
		if old, had := m.members[key]; had {
			if eq, ok := old.(registry.Equaler); ok && eq.Equal(value) {
				return false
			}
		}
		if m.members == nil {
			m.members = make(map[string]registry.Resource)
		}
		m.members[key] = value
	}
	return true
}

// takeErr returns why a member was left unchanged since the last call,
// or nil.
func (m *globMembers) takeErr() error {
	err := m.err
	m.err = nil
	return err
}

// collection returns the members as the collection name, sorted by name.
func (m *globMembers) collection(name string) *registry.GlobCollection {
	names := slices.Sorted(maps.Keys(m.members))
	coll := &registry.GlobCollection{Name: name, Members: make([]registry.GlobMember, len(names))}
	for i, n := range names {
		coll.Members[i] = registry.GlobMember{Name: n, Resource: m.members[n]}
	}
	return coll
}

// addVersions adds the members' versions to dst, and reports whether m
// (which may be nil) has had members since it was last reset: a
// collection's members are what the server knows by name.
func (m *globMembers) addVersions(dst map[string]string) bool {
	if m == nil || m.members == nil {
		return false
	}
	maps.Copy(dst, m.versions)
	return true
}
