package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
)

// TestNoticeChunks: the notices of a response come from chunks doubling
// from 1 to 64; another response, or the end of one, starts over; a
// notice made outside a response is one of its own.
func TestNoticeChunks(t *testing.T) {
	gateA, gateB := wire.NewGate(realClock{}), wire.NewGate(realClock{})
	for _, tc := range []struct {
		name  string
		gates []*wire.Gate // one notice each; nil: the end of the response
		sizes []int        // the chunks' sizes, in order
	}{
		{"one notice", []*wire.Gate{gateA}, []int{1}},
		{"doubling", slices.Repeat([]*wire.Gate{gateA}, 7), []int{1, 2, 4}},
		{"at most 64", slices.Repeat([]*wire.Gate{gateA}, 1+2+4+8+16+32+64+64+1), []int{1, 2, 4, 8, 16, 32, 64, 64, 64}},
		{"another response starts over", []*wire.Gate{gateA, gateA, gateB, gateB, gateB}, []int{1, 2, 1, 2}},
		{"the end starts over", []*wire.Gate{gateA, gateA, nil, gateA}, []int{1, 2, 1}},
	} {
		e := &Engine{}
		var sizes []int
		for i, g := range tc.gates {
			if g == nil {
				e.endNoticesLocked()
				continue
			}
			e.gate = g
			n := e.newNoticeLocked()
			if n.h != nil || n.err != nil {
				t.Errorf("%s: notice %d is not zero", tc.name, i)
			}
			n.isAmbient = true
			if c := e.noticeChunk; len(c.free) == c.size-1 { // n is a new chunk's first
				sizes = append(sizes, c.size)
			}
		}
		if !slices.Equal(sizes, tc.sizes) {
			t.Errorf("%s: chunk sizes %v, want %v", tc.name, sizes, tc.sizes)
		}
	}
	e := &Engine{}
	if a, b := e.newNoticeLocked(), e.newNoticeLocked(); a == b || e.noticeChunk.free != nil {
		t.Error("notices outside a response come from a chunk")
	}
}

var noticeSink *notice

func TestNoticeChunksAllocateOncePerChunk(t *testing.T) {
	var gateSink *wire.Gate
	gate := testing.AllocsPerRun(20, func() { gateSink = wire.NewGate(realClock{}) })
	_ = gateSink
	for _, tc := range []struct{ notices, allocs int }{{1, 1}, {3, 2}, {7, 3}, {127, 7}, {191, 8}} {
		got := testing.AllocsPerRun(20, func() {
			e := Engine{gate: wire.NewGate(realClock{})}
			for range tc.notices {
				noticeSink = e.newNoticeLocked()
			}
		})
		if got-gate != float64(tc.allocs) {
			t.Errorf("%d notices: %v allocations beside the gate's %v, want %d", tc.notices, got-gate, gate, tc.allocs)
		}
	}
}

// TestSharedOrigin: equal origins made in a row share one pointer; only
// the last one is shared.
func TestSharedOrigin(t *testing.T) {
	now := time.Unix(1, 0)
	e := &Engine{}
	var last *origin
	for i, step := range []struct {
		o    origin
		same bool // the last pointer comes back
	}{
		{origin{version: "1", received: now}, false},
		{origin{version: "1", received: now}, true},
		{origin{version: "2", received: now}, false},
		{origin{version: "1", received: now}, false},
		{origin{version: "1", received: now.Add(1)}, false},
	} {
		p := e.sharedOrigin(step.o)
		if *p != step.o || (p == last) != step.same {
			t.Errorf("step %d: sharedOrigin(%v) = %p, last %p; want the last again: %v", i, step.o, p, last, step.same)
		}
		last = p
	}
	if n := testing.AllocsPerRun(20, func() { e.sharedOrigin(origin{version: "1", received: now.Add(1)}) }); n != 0 {
		t.Errorf("sharedOrigin of the last value: %v allocations, want 0", n)
	}
}
