package wire

import (
	"slices"
	"testing"
)

func TestNamesList(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		base, added, removed []string
		want                 []string
	}{
		{"added to none", nil, []string{"a", "b"}, nil, []string{"a", "b"}},
		{"added first", []string{"b", "c"}, []string{"a"}, nil, []string{"a", "b", "c"}},
		{"added between", []string{"a", "c", "e"}, []string{"b", "d"}, nil, []string{"a", "b", "c", "d", "e"}},
		{"added last", []string{"a", "b"}, []string{"c"}, nil, []string{"a", "b", "c"}},
		{"removed first", []string{"a", "b", "c"}, nil, []string{"a"}, []string{"b", "c"}},
		{"removed last", []string{"a", "b", "c"}, nil, []string{"c"}, []string{"a", "b"}},
		{"removed all", []string{"a", "b"}, nil, []string{"a", "b"}, []string{}},
		{"added and removed", []string{"b", "d", "f"}, []string{"a", "e", "g"}, []string{"b", "f"}, []string{"a", "d", "e", "g"}},
		{"one replaces its neighbour", []string{"a", "c"}, []string{"b"}, []string{"c"}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := Names{Base: tc.base, Added: tc.added, Removed: tc.removed}
			got := n.List()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("List() = %v, want %v", got, tc.want)
			}
			if len(tc.base) > 0 && len(got) > 0 && &got[0] == &tc.base[0] {
				t.Fatal("List() built the list in Base's array, which the stream keeps")
			}
		})
	}
}

// TestNamesListUnchanged: with no changes the list is Base itself, so
// that the stream sees by identity that its names are those it wrote.
func TestNamesListUnchanged(t *testing.T) {
	base := []string{"a", "b"}
	if got := (Names{Base: base}).List(); !sameSlice(got, base) {
		t.Fatalf("List() = %v, not Base itself", got)
	}
}
