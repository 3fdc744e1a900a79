package lastgood

import (
	"math"
	"strings"
	"testing"
)

// TestRecordLengths: the lengths Apply decides by are those of the
// records it then writes.
func TestRecordLengths(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 16383, 16384, 1 << 21} {
		s := strings.Repeat("x", n)
		for _, id := range []uint64{0, 127, 128, 1 << 40} {
			p := put{source: id, name: s, version: s[:min(n, 200)], received: -1, raw: []byte(s)}
			if got, want := putLen(p.source, p.name, p.version, len(p.raw)), len(appendPut(nil, p)); got != want {
				t.Errorf("putLen(%d, %d bytes) = %d, want %d", id, n, got, want)
			}
		}
		k := key{authority: s[:min(n, 10)], typeURL: s, name: s}
		if got, want := deleteLen(k.authority, k.typeURL, k.name), len(appendDelete(nil, k)); got != want {
			t.Errorf("deleteLen(%d bytes) = %d, want %d", n, got, want)
		}
	}
	// Where a change set's commit record is follows from its begin
	// record only if both have one length, whatever they hold.
	for _, v := range []uint64{0, 1, 1 << 40, math.MaxUint64} {
		for _, kind := range []byte{kindBegin, kindCommit} {
			m := appendMark(nil, kind, v, v)
			if len(m) != markLen {
				t.Errorf("appendMark(%c, %d) has %d bytes, want markLen, %d", kind, v, len(m), markLen)
			}
			if l, n, ok := readMark(m, kind); !ok || l != v || n != v {
				t.Errorf("readMark(appendMark(%c, %d)) = %d, %d, %v", kind, v, l, n, ok)
			}
		}
	}
}
