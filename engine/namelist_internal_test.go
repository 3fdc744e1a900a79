package engine

import (
	"slices"
	"testing"
)

// handed is what Next returned.
type handed struct {
	names, added, removed []string
	first                 bool
}

func nextHanded(l *nameList) handed {
	var h handed
	h.names, h.added, h.removed, h.first = l.next()
	return h
}

// take refreshes the list from members, as the engine does from its
// cache, and takes it.
func takeList(l *nameList, members map[string]bool) handed {
	l.refresh(func() []string {
		var names []string
		for n, in := range members {
			if in {
				names = append(names, n)
			}
		}
		return names
	}, func(key string) bool { return members[key] })
	return nextHanded(l)
}

func equalNames(a, b []string) bool { return slices.Equal(a, b) || len(a) == 0 && len(b) == 0 }

// TestNameListChanges: what each take hands a stream, through watches, cancels,
// a stale list and a new stream.
func TestNameListChanges(t *testing.T) {
	members := map[string]bool{"b": true, "a": true}
	var l nameList
	for i, step := range []struct {
		do   func()
		want handed
	}{
		{func() {}, handed{names: []string{"a", "b"}, added: []string{"a", "b"}, first: true}},
		{func() {}, handed{names: []string{"a", "b"}}},
		{func() { members["c"] = true; l.touch("c"); l.touch("c") },
			handed{names: []string{"a", "b", "c"}, added: []string{"c"}}},
		{func() { members["a"] = false; l.touch("a"); l.touch("zz") /* never a member */ },
			handed{names: []string{"b", "c"}, removed: []string{"a"}}},
		{func() { members["d"] = true; members["b"] = false; l.markStale() },
			handed{names: []string{"c", "d"}, added: []string{"d"}, removed: []string{"b"}}},
		{func() { l.newStream() }, handed{names: []string{"c", "d"}, added: []string{"c", "d"}, first: true}},
		{func() { members["e"] = true; l.touch("e"); l.newStream() },
			handed{names: []string{"c", "d", "e"}, added: []string{"c", "d", "e"}, first: true}},
	} {
		step.do()
		got := takeList(&l, members)
		if !equalNames(got.names, step.want.names) || !equalNames(got.added, step.want.added) ||
			!equalNames(got.removed, step.want.removed) || got.first != step.want.first {
			t.Fatalf("step %d: handed %+v, want %+v", i, got, step.want)
		}
		if !l.wasHanded() {
			t.Fatalf("step %d: not Handed after Next", i)
		}
	}
}

// TestNameListTouchedBound: touched keys past the list's length plus the slack
// make the list stale rather than growing without end.
func TestNameListTouchedBound(t *testing.T) {
	var l nameList
	l.rebuild([]string{"a"})
	for range 1 + touchedSlack + 10 {
		l.touch("x")
	}
	if !l.stale() || len(l.touched) > 1+touchedSlack {
		t.Fatalf("after %d touches: stale %v, %d kept", 1+touchedSlack+10, l.stale(), len(l.touched))
	}
	l.touch("y") // ignored while stale
	if len(l.touched) != 0 {
		t.Fatalf("a stale list kept %d touched keys", len(l.touched))
	}
}

// TestNameListHandedIsNotModified: a list handed to a stream stays as it was
// when the list changes after.
func TestNameListHandedIsNotModified(t *testing.T) {
	var l nameList
	l.rebuild([]string{"b", "a"})
	h := nextHanded(&l)
	l.touch("c")
	l.merge([]string{"c"}, []string{"a"})
	if !slices.Equal(h.names, []string{"a", "b"}) {
		t.Fatalf("handed list became %v", h.names)
	}
}
