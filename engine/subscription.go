package engine

import (
	"slices"
)

// The names a channel hands its streams, per type: a sorted list, and
// what changed since the stream was last handed it. A watch added to
// 10,000 names costs a merge of one name, not a rebuild, and an ACK no
// walk of the cache and no sort.

// touchedSlack bounds the touched keys beyond the list's length: merging
// more costs about a rebuild, and watches and cancels repeated while no
// list is taken (a stream in backoff) must not grow it without end.
const touchedSlack = 1024

// nameList is a sorted list of names, the keys that may have joined or left
// it since, and what the current stream was handed last. The zero nameList
// is stale. Its user's lock guards it.
type nameList struct {
	// names is handed to the stream, which keeps it: replaced, never
	// modified.
	names []string
	// touched are the keys touched since, with repeats: an append per
	// Watch, where a set would hash and grow.
	touched []string
	built   bool
	// given is the list the stream was handed last, if handed; added and
	// removed are the last merge's changes, while they are changes since
	// given.
	given          []string
	handed         bool
	added, removed []string
}

// touch notes that key may have joined or left the list.
func (l *nameList) touch(key string) {
	switch {
	case !l.built:
	case len(l.touched) >= len(l.names)+touchedSlack:
		l.touched, l.built = nil, false
	default:
		l.touched = append(l.touched, key)
	}
}

// markStale has the list rebuilt: it may have changed in any way.
func (l *nameList) markStale() { l.built = false }

// stale reports whether the list is to be rebuilt rather than merged.
func (l *nameList) stale() bool { return !l.built }

// rebuild makes names, which it sorts, the list.
func (l *nameList) rebuild(names []string) {
	sortNames(names)
	l.names, l.touched, l.built = names, l.touched[:0], true
}

// touchedKeys returns the keys touched since the last Rebuild or Merge,
// sorted, without repeats; nil if none.
func (l *nameList) touchedKeys() []string {
	if len(l.touched) == 0 {
		return nil
	}
	sortNames(l.touched)
	return slices.Compact(l.touched)
}

// has reports whether key is listed.
func (l *nameList) has(key string) bool {
	_, ok := slices.BinarySearch(l.names, key)
	return ok
}

// merge joins added to the list and leaves removed out: the touched keys
// that joined or left it, sorted.
func (l *nameList) merge(added, removed []string) {
	clear(l.touched)
	l.touched = l.touched[:0]
	old := l.names
	l.names = mergeNames(old, added, removed)
	if l.handed && sameSlice(l.given, old) {
		l.added, l.removed = added, removed
	}
}

// refresh brings the list up to date: rebuilt from all's names when it
// is stale, else merged with the touched keys that listed now says joined
// or left it, a binary search each: k log n for k keys rather than a walk
// of n.
func (l *nameList) refresh(all func() []string, listed func(key string) bool) {
	if l.stale() {
		l.rebuild(all())
		return
	}
	touched := l.touchedKeys()
	if touched == nil {
		return
	}
	var added, removed []string
	for _, key := range touched {
		switch member, has := listed(key), l.has(key); {
		case member && !has:
			added = append(added, key)
		case !member && has:
			removed = append(removed, key)
		}
	}
	l.merge(added, removed)
}

// next returns the list to hand the stream and its changes since the
// stream was last handed it (first: never, and every name is added), and
// records it as handed.
func (l *nameList) next() (names, added, removed []string, first bool) {
	names, first = l.names, !l.handed
	switch {
	case first:
		added = names
	case l.added != nil || l.removed != nil:
		added, removed = l.added, l.removed
	case !sameSlice(l.given, names):
		added, removed = diffNames(l.given, names)
	}
	l.given, l.handed, l.added, l.removed = names, true, nil, nil
	return names, added, removed, first
}

// wasHanded reports whether the current stream was handed the list.
func (l *nameList) wasHanded() bool { return l.handed }

// newStream forgets what was handed: a new stream gets the whole list.
func (l *nameList) newStream() { l.given, l.handed = nil, false }

// sameSlice reports whether a and b are the same slice (the same array,
// the same length): a list handed to a stream is replaced, never changed.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
