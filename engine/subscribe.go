package engine

import (
	"slices"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
)

// subscribedNames is a channel's sorted list of the names of one type,
// the keys that may have joined or left it since it was built, and what
// the channel's stream was handed last.
type subscribedNames struct {
	// names is handed to the stream, which keeps it: never modified, only
	// replaced.
	names []string
	// touched are the keys touched since, in the order they were, with
	// repeats: an append per Watch, where a set would hash and grow. It
	// holds at most len(names)+touchedSlack keys; past that the list is
	// stale, and rebuilt from the cache rather than merged.
	touched []string
	stale   bool
	// given is the list the current stream was handed last; handed says
	// that it was handed one at all.
	given  []string
	handed bool
}

// touchedSlack bounds the touched keys beyond the list's length: a merge
// of more costs about what a rebuild does, and watches and cancels
// repeated while no request is built (a stream in backoff) must not grow
// the list without end.
const touchedSlack = 1024

func (sn *subscribedNames) touch(key string) {
	switch {
	case sn.stale:
	case len(sn.touched) >= len(sn.names)+touchedSlack:
		sn.touched, sn.stale = nil, true
	default:
		sn.touched = append(sn.touched, key)
	}
}

// subscriptionLocked returns the names of a type this channel's stream
// is to subscribe to now, with their changes since what it was handed
// last. Orphaned entries are left out and, when this is their
// authority's active channel, deleted: the request about to be written
// unsubscribes them. A watch added to 10,000 names costs a merge of the
// one name, not a rebuild.
func (c *channel) subscriptionLocked(typeURL string) wire.Subscription {
	sn := c.subscribed[typeURL]
	if sn == nil {
		sn = &subscribedNames{stale: true}
		c.subscribed[typeURL] = sn
	}
	var added, removed []string
	switch {
	case sn.stale:
		sn.names, sn.touched, sn.stale = c.collectNamesLocked(typeURL), sn.touched[:0], false
	case len(sn.touched) > 0:
		added, removed = c.changesLocked(typeURL, sn)
		clear(sn.touched)
		sn.touched = sn.touched[:0]
		old := sn.names
		sn.names = wire.MergeNames(old, added, removed)
		if !sn.handed || !sameSlice(sn.given, old) {
			added, removed = nil, nil
		}
	}
	sub := wire.Subscription{Names: sn.names, Version: c.versions[typeURL]}
	switch {
	case !sn.handed:
		sub.Added = sn.names
	case added != nil || removed != nil:
		sub.Added, sub.Removed = added, removed
	case !sameSlice(sn.given, sn.names):
		sub.Added, sub.Removed = wire.DiffNames(sn.given, sn.names)
	}
	if !sn.handed && c.delta {
		sub.Versions = c.resourceVersionsLocked(typeURL)
	}
	if len(sub.Added) > 0 {
		sub.Timeout = c.timerLocked().Timeout
		keys := c.e.keyLookup(typeURL)
		for _, name := range sub.Added {
			if _, en := keys.entry(name); en != nil && en.value == nil {
				sub.Awaited = append(sub.Awaited, name)
			}
		}
	}
	sn.given, sn.handed = sn.names, true
	return sub
}

// collectNamesLocked builds a type's list from the cache.
func (c *channel) collectNamesLocked(typeURL string) []string {
	n := 0 // a bound: orphaned entries are counted
	for a := range c.auths {
		n += len(a.resources[typeURL])
	}
	names := make([]string, 0, n)
	var gone []*entry
	for a := range c.auths {
		for name, en := range a.resources[typeURL] {
			if en.orphaned {
				if a.active() == c {
					gone = append(gone, en)
				}
				continue
			}
			names = append(names, name)
		}
	}
	for _, en := range gone {
		c.e.removeEntryLocked(en)
	}
	wire.SortNames(names)
	return names
}

// changesLocked tells, of the touched names, which joined the list and
// which left it: a sort of the touched names and a binary search of each
// in the list, k log n for k names rather than a walk of all n.
func (c *channel) changesLocked(typeURL string, sn *subscribedNames) (added, removed []string) {
	wire.SortNames(sn.touched)
	var gone []*entry
	for _, key := range slices.Compact(sn.touched) {
		member := false
		switch en := c.entryLocked(typeURL, key); {
		case en == nil:
		case en.orphaned:
			if en.auth.active() == c {
				gone = append(gone, en)
			}
		default:
			member = true
		}
		_, listed := slices.BinarySearch(sn.names, key)
		switch {
		case member && !listed:
			added = append(added, key)
		case !member && listed:
			removed = append(removed, key)
		}
	}
	for _, en := range gone {
		c.e.removeEntryLocked(en)
	}
	return added, removed
}

// entryLocked finds a cache key among the channel's authorities.
func (c *channel) entryLocked(typeURL, key string) *entry {
	for a := range c.auths {
		if en := a.resources[typeURL][key]; en != nil {
			return en
		}
	}
	return nil
}

// subscribedTypesLocked lists the types with at least one watched name.
func (c *channel) subscribedTypesLocked() []string {
	var types []string
	for a := range c.auths {
		for t, byName := range a.resources {
			if len(byName) > 0 && !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	slices.Sort(types)
	return types
}

// resourceVersionsLocked returns the versions of the resources of a type
// cached from this server, for an incremental stream's first request.
func (c *channel) resourceVersionsLocked(typeURL string) map[string]string {
	var versions map[string]string
	for a := range c.auths {
		for key, en := range a.resources[typeURL] {
			if en.orphaned || en.value == nil || en.source != c {
				continue
			}
			if versions == nil {
				versions = make(map[string]string)
			}
			if en.glob.AddVersions(versions) {
				continue
			}
			if en.version != "" {
				versions[key] = en.version
			}
		}
	}
	return versions
}

// timerLocked is the does-not-exist timer for resources from this server.
func (c *channel) timerLocked() features.Timer {
	t := c.features.ResourceTimer(features.DefaultTimer)
	if c.e.cfg.ResourceTimeout > 0 {
		t.Timeout = c.e.cfg.ResourceTimeout
	}
	return t
}

// sameSlice reports whether a and b are the same slice (the same array,
// the same length): a list handed to a stream is replaced, never changed.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
