// Package glob keeps the members of glob collections (xRFC TP1): a watch
// of "xdstp://a/type/path/*" is answered with the members,
// "xdstp://a/type/path/<id>", which nobody watches by name, and is
// delivered as a *registry.GlobCollection. Touched gathers the collections
// a response changed, to deliver them once it is applied.
package glob

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/registry"
)

// Members is one collection's members by name.
type Members struct {
	members map[string]registry.Resource
	// versions are the members' own versions (incremental xDS), for
	// initial_resource_versions: with them, a server tells a new stream
	// which members went away meanwhile.
	versions map[string]string
	// err is why the last response left a member unchanged.
	err error
}

// Reset forgets the members: those of another server (a fallback, or the
// primary back) are the collection, not a union with the last server's.
func (m *Members) Reset() { m.members, m.versions = nil, nil }

// Update records a member's new value and version, its removal (value
// nil), or why its new value is invalid (err; its last good value stays).
// It reports whether the collection's watchers are to hear of it.
func (m *Members) Update(key string, value registry.Resource, version string, err error) bool {
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

// TakeErr returns why a member was left unchanged since the last call,
// or nil.
func (m *Members) TakeErr() error {
	err := m.err
	m.err = nil
	return err
}

// Collection returns the members as the collection name, sorted by name.
func (m *Members) Collection(name string) *registry.GlobCollection {
	names := slices.Sorted(maps.Keys(m.members))
	coll := &registry.GlobCollection{Name: name, Members: make([]registry.GlobMember, len(names))}
	for i, n := range names {
		coll.Members[i] = registry.GlobMember{Name: n, Resource: m.members[n]}
	}
	return coll
}

// AddVersions adds the members' versions to dst, and reports whether m
// (which may be nil) has had members since it was last reset: a
// collection's members are what the server knows by name.
func (m *Members) AddVersions(dst map[string]string) bool {
	if m == nil || m.members == nil {
		return false
	}
	maps.Copy(dst, m.versions)
	return true
}

// Touched is the set of collections a response changed, delivered once
// it is applied, in the order of their names. The zero value is empty.
type Touched[E comparable] struct{ set map[E]bool }

// Add adds a collection.
func (t *Touched[E]) Add(e E) {
	if t.set == nil {
		t.set = make(map[E]bool)
	}
	t.set[e] = true
}

// Len returns how many collections the set holds.
func (t *Touched[E]) Len() int { return len(t.set) }

// Take empties the set and returns its collections, sorted by name.
func (t *Touched[E]) Take(name func(E) string) []E {
	out := slices.SortedFunc(maps.Keys(t.set), func(a, b E) int { return strings.Compare(name(a), name(b)) })
	t.set = nil
	return out
}
