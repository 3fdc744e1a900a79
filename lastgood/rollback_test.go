package lastgood

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// committedSets is a store file holding a snapshot and two change sets
// appended after it, each committed (its Apply returned), with the
// states the store went through.
type committedSets struct {
	file []byte
	// starts[i] is where change set i+1 begins; ends[i] where it ends.
	starts, ends [2]int64
	// states[i] is the store after change set i (0: the snapshot).
	states [3][]storage.Resource
}

func newCommittedSets(t *testing.T) committedSets {
	t.Helper()
	path := storePath(t)
	snapshot, set1, set2, offs := changeSetStore(t, path)
	cs := committedSets{file: readFile(t, path), starts: offs}
	cs.ends = [2]int64{offs[1], int64(len(cs.file))}
	cs.states = [3][]storage.Resource{
		resourcesOf(snapshot...),
		resourcesOf(set1[0], snapshot[2], set1[2]),
		resourcesOf(set1[0], set2[1], set2[0], set1[2]),
	}
	return cs
}

// before returns the state of the store before the first change set
// that holds a byte of damaged.
func (cs committedSets) before(damaged []int64) []storage.Resource {
	first := len(cs.starts)
	for _, off := range damaged {
		for i := range cs.starts {
			if off >= cs.starts[i] && off < cs.ends[i] {
				first = min(first, i)
			}
		}
	}
	return cs.states[first]
}

// TestDamagedCommittedChangeSetReported damages each byte of each
// committed change set in turn, the one followed by another as well as
// the last: a reader must never take a damaged change set whose commit
// was written for one cut short by a crash, which would silently bring
// back an older configuration than the one the engine last wrote. Every
// damage is counted in Corrupt, and what Load returns is the state before
// the damaged change set.
func TestDamagedCommittedChangeSetReported(t *testing.T) {
	cs := newCommittedSets(t)
	path := storePath(t)
	for _, flip := range []byte{0x01, 0xff} { // a bit, a whole byte
		for off := cs.starts[0]; off < int64(len(cs.file)); off++ {
			b := bytes.Clone(cs.file)
			b[off] ^= flip
			writeFile(t, path, b)
			// Read-only, so that nothing is moved aside or rewritten between
			// two damages; the writer's handling is checked below.
			r := mustOpen(t, path, Options{ReadOnly: true})
			l := mustLoad(t, r, testDigest)
			r.Close()
			if l.Corrupt == 0 {
				t.Errorf("byte %d of %d (change sets at %v..%v) ^ %#x: Corrupt = 0, want > 0", off, len(cs.file), cs.starts, cs.ends, flip)
			}
			if d := diffResources(cs.before([]int64{off}), l.Resources); d != "" {
				t.Errorf("byte %d ^ %#x: Load (-want +got):\n%s", off, flip, d)
			}
		}
	}
}

// TestDamagedChangeSetMovedAside: a writer that finds a committed change
// set damaged keeps the file as it found it (PATH.corrupt-*), warns, and
// carries on from the state before the damaged change set, which it
// writes anew; the next Open finds nothing wrong.
func TestDamagedChangeSetMovedAside(t *testing.T) {
	cs := newCommittedSets(t)
	mid := func(i int) int64 { return (cs.starts[i] + cs.ends[i]) / 2 }
	for _, tc := range []struct {
		name    string
		damaged []int64
	}{
		{"the first set's first byte", []int64{cs.starts[0]}},
		{"the middle of the first set", []int64{mid(0)}},
		{"the first set's last byte", []int64{cs.ends[0] - 1}},
		{"the second set's first byte", []int64{cs.starts[1]}},
		{"the middle of the second set", []int64{mid(1)}},
		{"the last byte of the file", []int64{cs.ends[1] - 1}},
		{"both sets", []int64{mid(0), mid(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := storePath(t)
			bad := bytes.Clone(cs.file)
			for _, off := range tc.damaged {
				bad[off] ^= 0xff
			}
			writeFile(t, path, bad)
			var logs bytes.Buffer
			s := mustOpen(t, path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			want := cs.before(tc.damaged)
			l := mustLoad(t, s, testDigest)
			if d := diffResources(want, l.Resources); d != "" {
				t.Errorf("Load (-want +got):\n%s", d)
			}
			if l.Corrupt == 0 {
				t.Errorf("Corrupt = 0, want > 0")
			}
			moved := s.MovedAside()
			if !strings.HasPrefix(moved, path+".corrupt-") {
				t.Fatalf("MovedAside() = %q, want %s.corrupt-*", moved, path)
			}
			if got, err := os.ReadFile(moved); err != nil || !bytes.Equal(got, bad) {
				t.Errorf("the file moved aside is not the damaged store (%v)", err)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), moved) {
				t.Errorf("no warning naming %s; the log:\n%s", moved, logs.String())
			}

			// The store carries on from that state, and the next Open finds it
			// whole.
			next := clusterPut(9, 4, smallCluster)
			mustApply(t, s, testDigest, next)
			s.Close()
			s = mustOpen(t, path, Options{})
			l = mustLoad(t, s, testDigest)
			if d := diffResources(append(append([]storage.Resource(nil), want...), next.Resource), l.Resources); d != "" {
				t.Errorf("Load after the next change set (-want +got):\n%s", d)
			}
			if l.Corrupt != 0 || s.MovedAside() != "" {
				t.Errorf("reopened: Corrupt = %d, MovedAside() = %q; want 0, \"\"", l.Corrupt, s.MovedAside())
			}
		})
	}
}

// TestCrashTailNotReported cuts the file at each byte of the change sets,
// as a crash while appending leaves it: the change set cut short is left
// out without a word, neither counted nor moved aside, and the store
// holds the state after the last whole one.
func TestCrashTailNotReported(t *testing.T) {
	cs := newCommittedSets(t)
	path := storePath(t)
	for end := cs.starts[0]; end < int64(len(cs.file)); end++ {
		writeFile(t, path, cs.file[:end])
		want := cs.states[0]
		for i := range cs.ends {
			if cs.ends[i] <= end {
				want = cs.states[i+1]
			}
		}
		r := mustOpen(t, path, Options{ReadOnly: true})
		l := mustLoad(t, r, testDigest)
		r.Close()
		if l.Corrupt != 0 {
			t.Errorf("cut at %d (change sets at %v..%v): Corrupt = %d, want 0", end, cs.starts, cs.ends, l.Corrupt)
		}
		if d := diffResources(want, l.Resources); d != "" {
			t.Errorf("cut at %d: Load (-want +got):\n%s", end, d)
		}
	}
	// A writer cuts the tail off and moves nothing aside: a few cuts,
	// each an fsync.
	for _, end := range []int64{cs.starts[1] + 1, (cs.starts[1] + cs.ends[1]) / 2, cs.ends[1] - 1} {
		writeFile(t, path, cs.file[:end])
		s := mustOpen(t, path, Options{})
		l := mustLoad(t, s, testDigest)
		if d := diffResources(cs.states[1], l.Resources); d != "" || l.Corrupt != 0 || s.MovedAside() != "" {
			t.Errorf("writer, cut at %d: Corrupt = %d, MovedAside() = %q, Load (-want +got):\n%s", end, l.Corrupt, s.MovedAside(), d)
		}
		s.Close()
		if fi, err := os.Stat(path); err != nil || fi.Size() != cs.starts[1] {
			t.Errorf("writer, cut at %d: the tail was not cut off: %v, %v", end, fi.Size(), err)
		}
	}
}

// TestDamagedChangeSetFoundByLoad: bytes damaged under a writer that holds
// the store are found by its next Load, which reports them and goes on
// as Open would, rather than handing back an older state as the current
// one.
func TestDamagedChangeSetFoundByLoad(t *testing.T) {
	cs := newCommittedSets(t)
	path := storePath(t)
	writeFile(t, path, cs.file)
	s := mustOpen(t, path, Options{})
	if d := diffResources(cs.states[2], mustLoad(t, s, testDigest).Resources); d != "" {
		t.Fatalf("Load before the damage (-want +got):\n%s", d)
	}
	bad := bytes.Clone(cs.file)
	bad[(cs.starts[1]+cs.ends[1])/2] ^= 0xff
	writeFile(t, path, bad) // the same file, which the writer has open

	l := mustLoad(t, s, testDigest)
	if d := diffResources(cs.states[1], l.Resources); d != "" {
		t.Errorf("Load after the damage (-want +got):\n%s", d)
	}
	if l.Corrupt == 0 {
		t.Errorf("Corrupt = 0, want > 0")
	}
	if moved := s.MovedAside(); !strings.HasPrefix(moved, path+".corrupt-") || !bytes.Equal(readFile(t, moved), bad) {
		t.Errorf("MovedAside() = %q, want %s.corrupt-* holding the damaged store", moved, path)
	}
	next := clusterPut(9, 4, smallCluster)
	mustApply(t, s, testDigest, next)
	s.Close()
	s = mustOpen(t, path, Options{})
	l = mustLoad(t, s, testDigest)
	if d := diffResources(append(append([]storage.Resource(nil), cs.states[1]...), next.Resource), l.Resources); d != "" {
		t.Errorf("Load after the next change set (-want +got):\n%s", d)
	}
	if l.Corrupt != 0 || s.MovedAside() != "" {
		t.Errorf("reopened: Corrupt = %d, MovedAside() = %q; want 0, \"\"", l.Corrupt, s.MovedAside())
	}
}
