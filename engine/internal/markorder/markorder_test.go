package markorder

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// values walks l from the back to the front, as the engine looks for
// deletions, and returns the values front first; it checks the links
// forward too.
func values(t *testing.T, l *List[string]) []string {
	t.Helper()
	var back []string
	for n := l.Back(); n != nil; n = n.Prev() {
		back = append(back, n.Value)
	}
	slices.Reverse(back)
	var front []string
	for n := l.front; n != nil; n = n.next {
		front = append(front, n.Value)
	}
	if !slices.Equal(front, back) {
		t.Fatalf("links disagree: forward %q, backward %q", front, back)
	}
	return back
}

// TestList: appends, removals and moves to the front from any place,
// each checked both ways.
func TestList(t *testing.T) {
	type op struct {
		do   string // push, remove, front
		node string
	}
	for _, tc := range []struct {
		name string
		ops  []op
		want []string
	}{
		{"empty", nil, nil},
		{"pushes", []op{{"push", "a"}, {"push", "b"}, {"push", "c"}}, []string{"a", "b", "c"}},
		{"remove middle", []op{{"push", "a"}, {"push", "b"}, {"push", "c"}, {"remove", "b"}}, []string{"a", "c"}},
		{"remove front", []op{{"push", "a"}, {"push", "b"}, {"remove", "a"}}, []string{"b"}},
		{"remove back", []op{{"push", "a"}, {"push", "b"}, {"remove", "b"}}, []string{"a"}},
		{"remove only", []op{{"push", "a"}, {"remove", "a"}}, nil},
		{"remove and push again", []op{{"push", "a"}, {"push", "b"}, {"remove", "a"}, {"push", "a"}}, []string{"b", "a"}},
		{"back to front", []op{{"push", "a"}, {"push", "b"}, {"push", "c"}, {"front", "c"}}, []string{"c", "a", "b"}},
		{"middle to front", []op{{"push", "a"}, {"push", "b"}, {"push", "c"}, {"front", "b"}}, []string{"b", "a", "c"}},
		{"front to front", []op{{"push", "a"}, {"push", "b"}, {"front", "a"}}, []string{"a", "b"}},
		{"only to front", []op{{"push", "a"}, {"front", "a"}}, []string{"a"}},
		{"a response's marks, in order", []op{{"push", "a"}, {"push", "b"}, {"push", "c"}, {"push", "d"},
			{"front", "d"}, {"front", "b"}}, []string{"b", "d", "a", "c"}},
	} {
		var l List[string]
		nodes := map[string]*Node[string]{}
		for _, o := range tc.ops {
			switch o.do {
			case "push":
				nodes[o.node] = &Node[string]{Value: o.node}
				l.PushBack(nodes[o.node])
			case "remove":
				l.Remove(nodes[o.node])
				if n := nodes[o.node]; n.prev != nil || n.next != nil {
					t.Errorf("%s: a removed node keeps its links", tc.name)
				}
			case "front":
				l.MoveToFront(nodes[o.node])
			}
		}
		if got := values(t, &l); !slices.Equal(got, tc.want) {
			t.Errorf("%s: list %q, want %q", tc.name, got, tc.want)
		}
	}
}
