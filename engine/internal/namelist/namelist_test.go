package namelist

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// handed is what Next returned.
type handed struct {
	names, added, removed []string
	first                 bool
}

func next(l *List) handed {
	var h handed
	h.names, h.added, h.removed, h.first = l.Next()
	return h
}

// take refreshes the list from members, as the engine does from its
// cache, and takes it.
func take(l *List, members map[string]bool) handed {
	l.Refresh(func() []string {
		var names []string
		for n, in := range members {
			if in {
				names = append(names, n)
			}
		}
		return names
	}, func(key string) bool { return members[key] })
	return next(l)
}

func equal(a, b []string) bool { return slices.Equal(a, b) || len(a) == 0 && len(b) == 0 }

// TestChanges: what each take hands a stream, through watches, cancels,
// a stale list and a new stream.
func TestChanges(t *testing.T) {
	members := map[string]bool{"b": true, "a": true}
	var l List
	for i, step := range []struct {
		do   func()
		want handed
	}{
		{func() {}, handed{names: []string{"a", "b"}, added: []string{"a", "b"}, first: true}},
		{func() {}, handed{names: []string{"a", "b"}}},
		{func() { members["c"] = true; l.Touch("c"); l.Touch("c") },
			handed{names: []string{"a", "b", "c"}, added: []string{"c"}}},
		{func() { members["a"] = false; l.Touch("a"); l.Touch("zz") /* never a member */ },
			handed{names: []string{"b", "c"}, removed: []string{"a"}}},
		{func() { members["d"] = true; members["b"] = false; l.MarkStale() },
			handed{names: []string{"c", "d"}, added: []string{"d"}, removed: []string{"b"}}},
		{func() { l.NewStream() }, handed{names: []string{"c", "d"}, added: []string{"c", "d"}, first: true}},
		{func() { members["e"] = true; l.Touch("e"); l.NewStream() },
			handed{names: []string{"c", "d", "e"}, added: []string{"c", "d", "e"}, first: true}},
	} {
		step.do()
		got := take(&l, members)
		if !equal(got.names, step.want.names) || !equal(got.added, step.want.added) ||
			!equal(got.removed, step.want.removed) || got.first != step.want.first {
			t.Fatalf("step %d: handed %+v, want %+v", i, got, step.want)
		}
		if !l.Handed() {
			t.Fatalf("step %d: not Handed after Next", i)
		}
	}
}

// TestTouchedBound: touched keys past the list's length plus the slack
// make the list stale rather than growing without end.
func TestTouchedBound(t *testing.T) {
	var l List
	l.Rebuild([]string{"a"})
	for range 1 + touchedSlack + 10 {
		l.Touch("x")
	}
	if !l.Stale() || len(l.touched) > 1+touchedSlack {
		t.Fatalf("after %d touches: stale %v, %d kept", 1+touchedSlack+10, l.Stale(), len(l.touched))
	}
	l.Touch("y") // ignored while stale
	if len(l.touched) != 0 {
		t.Fatalf("a stale list kept %d touched keys", len(l.touched))
	}
}

// TestHandedListIsNotModified: a list handed to a stream stays as it was
// when the list changes after.
func TestHandedListIsNotModified(t *testing.T) {
	var l List
	l.Rebuild([]string{"b", "a"})
	h := next(&l)
	l.Touch("c")
	l.Merge([]string{"c"}, []string{"a"})
	if !slices.Equal(h.names, []string{"a", "b"}) {
		t.Fatalf("handed list became %v", h.names)
	}
}
