package lastgood

import "iter"

// index finds a resource's slot by its key: by authority and type URL
// first, then by name, so that a lookup hashes and compares the name
// alone when it names the same type as the one before (as the resources
// of a response do).
type index struct {
	groups map[group]*nameIndex
	last   *nameIndex // of the last lookup
	n      int
}

type group struct{ authority, typeURL string }

type nameIndex struct {
	group
	names map[string]*slot
}

func newIndex() *index { return &index{groups: map[group]*nameIndex{}} }

func (x *index) group(authority, typeURL string, create bool) *nameIndex {
	if g := x.last; g != nil && g.typeURL == typeURL && g.authority == authority {
		return g
	}
	g := x.groups[group{authority, typeURL}]
	if g == nil {
		if !create {
			return nil
		}
		g = &nameIndex{group: group{authority, typeURL}, names: map[string]*slot{}}
		x.groups[g.group] = g
	}
	x.last = g
	return g
}

func (x *index) get(k key) *slot {
	if g := x.group(k.authority, k.typeURL, false); g != nil {
		return g.names[k.name]
	}
	return nil
}

func (x *index) add(sl *slot) {
	g := x.group(sl.k.authority, sl.k.typeURL, true)
	if _, ok := g.names[sl.k.name]; !ok {
		x.n++
	}
	g.names[sl.k.name] = sl
}

func (x *index) del(k key) {
	g := x.group(k.authority, k.typeURL, false)
	if g == nil {
		return
	}
	if _, ok := g.names[k.name]; ok {
		delete(g.names, k.name)
		x.n--
	}
}

func (x *index) len() int { return x.n }

func (x *index) all() iter.Seq[*slot] {
	return func(yield func(*slot) bool) {
		for _, g := range x.groups {
			for _, sl := range g.names {
				if !yield(sl) {
					return
				}
			}
		}
	}
}
