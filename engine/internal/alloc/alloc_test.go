package alloc

import (
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type notice struct {
	n    int
	text string
}

var keyA, keyB = new(int), new(int) // two responses

func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []*int // one New each; nil: End
		sizes []int  // the chunks' sizes, in order
	}{
		{"one value", []*int{keyA}, []int{1}},
		{"doubling", []*int{keyA, keyA, keyA, keyA, keyA, keyA, keyA}, []int{1, 2, 4}},
		{"at most 64", slices.Repeat([]*int{keyA}, 1+2+4+8+16+32+64+64+1), []int{1, 2, 4, 8, 16, 32, 64, 64, 64}},
		{"a new key starts over", []*int{keyA, keyA, keyB, keyB, keyB}, []int{1, 2, 1, 2}},
		{"End starts over", []*int{keyA, keyA, nil, keyA}, []int{1, 2, 1}},
	} {
		var c Chunks[*int, notice]
		var sizes []int
		for i, k := range tc.keys {
			if k == nil {
				c.End()
				if c.free != nil || c.key != nil {
					t.Errorf("%s: End kept key %v and %d values", tc.name, c.key, len(c.free))
				}
				continue
			}
			v := c.New(k)
			if *v != (notice{}) {
				t.Errorf("%s: value %d is %+v, want zero", tc.name, i, *v)
			}
			*v = notice{i, "used"}
			if len(c.free) == c.size-1 { // v is a new chunk's first
				sizes = append(sizes, c.size)
			}
		}
		if !slices.Equal(sizes, tc.sizes) {
			t.Errorf("%s: chunk sizes %v, want %v", tc.name, sizes, tc.sizes)
		}
	}
}

var sink *notice

func TestChunksAllocateOncePerChunk(t *testing.T) {
	for _, tc := range []struct{ values, allocs int }{{1, 1}, {3, 2}, {7, 3}, {127, 7}, {191, 8}} {
		got := testing.AllocsPerRun(20, func() {
			var c Chunks[*int, notice]
			for range tc.values {
				sink = c.New(keyA)
			}
		})
		if int(got) != tc.allocs {
			t.Errorf("%d values: %v allocations, want %d", tc.values, got, tc.allocs)
		}
	}
}

type origin struct {
	version string
	at      time.Time
}

func TestShared(t *testing.T) {
	now := time.Unix(1, 0)
	var s Shared[origin]
	var last *origin
	for i, step := range []struct {
		v    origin
		same bool // the last pointer comes back
	}{
		{origin{"1", now}, false},
		{origin{"1", now}, true},
		{origin{"1", now}, true},
		{origin{"2", now}, false},
		{origin{"1", now}, false}, // only the last is shared
		{origin{"1", now.Add(1)}, false},
	} {
		p := s.Of(step.v)
		if *p != step.v || (p == last) != step.same {
			t.Errorf("step %d: Of(%v) = %p (%v), last %p; want the last again: %v", i, step.v, p, *p, last, step.same)
		}
		last = p
	}
	if n := testing.AllocsPerRun(20, func() { s.Of(origin{"1", now.Add(1)}) }); n != 0 {
		t.Errorf("Of of the last value: %v allocations, want 0", n)
	}
}
