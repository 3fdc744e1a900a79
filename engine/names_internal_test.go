package engine

import (
	"slices"
	"testing"
)

func TestMergeNames(t *testing.T) {
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
			got := mergeNames(tc.base, tc.added, tc.removed)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("mergeNames() = %v, want %v", got, tc.want)
			}
			if len(tc.base) > 0 && len(got) > 0 && &got[0] == &tc.base[0] {
				t.Fatal("mergeNames() built the list in base's array, which a stream keeps")
			}
		})
	}
	// With no changes the list is base itself, so that a stream sees by
	// identity that its names are those it wrote.
	base := []string{"a", "b"}
	if got := mergeNames(base, nil, nil); !sameSlice(got, base) {
		t.Fatalf("mergeNames() = %v, not base itself", got)
	}
}

func TestDiffNames(t *testing.T) {
	for _, tc := range []struct {
		name           string
		old, cur       []string
		added, removed []string
	}{
		{"both empty", nil, nil, nil, nil},
		{"all new", nil, []string{"a", "b"}, []string{"a", "b"}, nil},
		{"all gone", []string{"a", "b"}, nil, nil, []string{"a", "b"}},
		{"same", []string{"a", "b"}, []string{"a", "b"}, nil, nil},
		{"interleaved", []string{"a", "c", "e"}, []string{"b", "c", "d", "f"}, []string{"b", "d", "f"}, []string{"a", "e"}},
		{"prefix kept", []string{"a", "b", "c"}, []string{"a", "b"}, nil, []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added, removed := diffNames(tc.old, tc.cur)
			if !slices.Equal(added, tc.added) || !slices.Equal(removed, tc.removed) {
				t.Errorf("added %v, removed %v; want %v, %v", added, removed, tc.added, tc.removed)
			}
		})
	}
}
