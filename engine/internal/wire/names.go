package wire

import "slices"

// Names is a type's list of names to subscribe to as the host hands it
// to the stream: the list it handed over last (Base) and the names that
// joined it (Added) and left it (Removed) since, each sorted. Added holds
// no name of Base, Removed only names of Base.
//
// The changes rather than the new list: a watch added to 10,000 names
// changes one, and the stream then sets its does-not-exist timers from
// the one name under the lock, and copies the 10,000 into the new list
// with the lock released (a copy whose allocation may start a garbage
// collection, which every Watch waiting for the lock would wait for).
type Names struct {
	Base, Added, Removed []string
	// Gen tells the host which hand-over a list built by List comes back
	// from (Host.SubscriptionBuiltLocked).
	Gen uint64
}

// Changed reports whether the list differs from Base.
func (n Names) Changed() bool { return len(n.Added) > 0 || len(n.Removed) > 0 }

// List returns the new list: Base itself if nothing changed, else a new
// slice. The runs of Base between changes are found by binary search and
// copied whole: k log n comparisons for k changes rather than n.
func (n Names) List() []string {
	if !n.Changed() {
		return n.Base
	}
	base, added, removed := n.Base, n.Added, n.Removed
	out := make([]string, 0, len(base)+len(added)-len(removed))
	i := 0
	for len(added) > 0 || len(removed) > 0 {
		var key string
		isAdded := len(removed) == 0 || (len(added) > 0 && added[0] < removed[0])
		if isAdded {
			key, added = added[0], added[1:]
		} else {
			key, removed = removed[0], removed[1:]
		}
		pos, found := slices.BinarySearch(base[i:], key)
		out = append(out, base[i:i+pos]...)
		i += pos
		if found {
			i++
		}
		if isAdded {
			out = append(out, key)
		}
	}
	return append(out, base[i:]...)
}
