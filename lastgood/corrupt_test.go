package lastgood

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdsengine/xdsengine/engine/storage"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestUnreadableStoreMovedAside(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(b []byte) []byte
	}{
		{"empty file", func([]byte) []byte { return nil }},
		{"another file", func([]byte) []byte { return []byte("{\"not\": \"a store\"}\n") }},
		{"header checksum", func(b []byte) []byte { b[30] ^= 1; return b }},
		{"digest", func(b []byte) []byte { b[headerFixed] ^= 0x80; return b }},
		// Version 1 could not tell a damaged change set from one cut short.
		{"format version 1", func(b []byte) []byte { return withVersion(b, 1) }},
		{"a later format version", func(b []byte) []byte { return withVersion(b, FormatVersion+1) }},
		{"cut in the header", func(b []byte) []byte { return b[:20] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := storePath(t)
			s := mustOpen(t, path, Options{})
			mustApply(t, s, testDigest, clusterPut(1, 1, smallCluster))
			s.Close()
			bad := tc.corrupt(readFile(t, path))
			writeFile(t, path, bad)

			s = mustOpen(t, path, Options{})
			defer s.Close()
			moved := s.MovedAside()
			if !strings.HasPrefix(moved, path+".corrupt-") {
				t.Fatalf("MovedAside() = %q, want %s.corrupt-*", moved, path)
			}
			if got := readFile(t, moved); !bytes.Equal(got, bad) {
				t.Errorf("the file moved aside is not the unreadable store")
			}
			if fi, err := os.Stat(moved); err != nil || fi.Mode() != 0o600 {
				t.Errorf("the file moved aside: %v, %v", fi, err)
			}
			if l := mustLoad(t, s, testDigest); len(l.Resources) != 0 {
				t.Errorf("loaded %d resources from a new store", len(l.Resources))
			}
			// The new store works.
			mustApply(t, s, testDigest, clusterPut(2, 1, smallCluster))
			if l := mustLoad(t, s, testDigest); len(l.Resources) != 1 {
				t.Errorf("loaded %d resources, want 1", len(l.Resources))
			}
		})
	}
	t.Run("twice in a second", func(t *testing.T) {
		path := storePath(t)
		var moved []string
		for range 2 {
			writeFile(t, path, []byte("junk"))
			s := mustOpen(t, path, Options{})
			moved = append(moved, s.MovedAside())
			s.Close()
		}
		if moved[0] == moved[1] || moved[0] == "" || moved[1] == "" {
			t.Errorf("moved aside to %q", moved)
		}
	})
}

// withVersion returns the store file b with its header stating format
// version v, checked as any header is.
func withVersion(b []byte, v uint32) []byte {
	h, n, err := parseHeader(b)
	if err != nil {
		panic(err)
	}
	hv := appendHeader(nil, h)
	binary.LittleEndian.PutUint32(hv[8:], v)
	end := len(hv) - 4
	binary.LittleEndian.PutUint32(hv[end:], crc32.Checksum(hv[:end], castagnoli))
	return append(hv, b[n:]...)
}

// snapshotOf makes a store whose resources are all in the snapshot.
func snapshotOf(t *testing.T, path string, changes ...storage.Change) {
	t.Helper()
	s := mustOpen(t, path, Options{})
	mustApply(t, s, []byte("first"))
	mustApply(t, s, testDigest, changes...)
	if s.size != s.compacted() {
		t.Fatalf("the store has %d bytes, compacted %d: not a snapshot", s.size, s.compacted())
	}
	s.Close()
}

func TestCorruptResourceDropped(t *testing.T) {
	var changes []storage.Change
	for i := range 5 {
		changes = append(changes, clusterPut(i, 1, meshCluster))
	}
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, b []byte) []byte
		lost    []int // indexes of changes lost
	}{
		{"its bytes", func(t *testing.T, b []byte) []byte {
			i := bytes.Index(b, changes[2].Raw)
			b[i+100] ^= 0x10
			return b
		}, []int{2}},
		{"its name", func(t *testing.T, b []byte) []byte {
			i := bytes.Index(b, []byte(changes[3].Name))
			b[i] = 'C'
			return b
		}, []int{3}},
		{"its record's size", func(t *testing.T, b []byte) []byte {
			// The index still says where the next record begins.
			i := bytes.Index(b, []byte(changes[1].Name))
			b[i-frameLen-3]++
			return b
		}, []int{1}},
		{"a record's size, and the index", func(t *testing.T, b []byte) []byte {
			// Read one after the other, the records after it are lost.
			i := bytes.Index(b, []byte(changes[1].Name))
			b[i-frameLen-3] += 3
			h, _, _ := parseHeader(b)
			b[h.indexOff+frameLen+2]++
			return b
		}, []int{1, 2, 3, 4}},
		{"its source", func(t *testing.T, b []byte) []byte {
			i := bytes.Index(b, []byte(clusterType))
			b[i+5] = 'X'
			return b
		}, []int{0, 1, 2, 3, 4}},
		{"the end cut off", func(t *testing.T, b []byte) []byte {
			return b[:bytes.Index(b, changes[4].Raw)+50]
		}, []int{4}},
		{"the index cut off", func(t *testing.T, b []byte) []byte {
			return b[:len(b)-3]
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := storePath(t)
			snapshotOf(t, path, changes...)
			writeFile(t, path, tc.corrupt(t, readFile(t, path)))

			s := mustOpen(t, path, Options{})
			defer s.Close()
			var want []storage.Change
			for i, c := range changes {
				if !containsInt(tc.lost, i) {
					want = append(want, c)
				}
			}
			l := mustLoad(t, s, testDigest)
			if d := diffResources(resourcesOf(want...), l.Resources); d != "" {
				t.Errorf("Load (-want +got):\n%s", d)
			}
			if l.Corrupt != len(tc.lost) {
				t.Errorf("Corrupt = %d, want %d", l.Corrupt, len(tc.lost))
			}
			// Reported once, and gone from the file.
			if l := mustLoad(t, s, testDigest); l.Corrupt != 0 || len(l.Resources) != len(want) {
				t.Errorf("second Load: %d resources, %d corrupt", len(l.Resources), l.Corrupt)
			}
			if sc, err := scan(readFile(t, path)); err != nil || sc.damaged {
				t.Errorf("the store was not rewritten whole: %v", err)
			}
			if s.MovedAside() != "" {
				t.Errorf("moved aside for one resource")
			}
		})
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// changeSetStore makes a snapshot and two change sets after it, and
// returns the offsets where each change set begins.
func changeSetStore(t *testing.T, path string) (snapshot, set1, set2 []storage.Change, offs [2]int64) {
	snapshot = []storage.Change{clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster), clusterPut(3, 1, smallCluster)}
	set1 = []storage.Change{clusterPut(1, 2, smallCluster), clusterDelete(2), clusterPut(4, 2, smallCluster)}
	set2 = []storage.Change{clusterPut(3, 3, smallCluster), clusterPut(2, 3, smallCluster)}
	snapshotOf(t, path, snapshot...)
	s := mustOpen(t, path, Options{})
	offs[0] = s.size
	mustApply(t, s, testDigest, set1...)
	offs[1] = s.size
	mustApply(t, s, testDigest, set2...)
	if s.compacted() == s.size {
		t.Fatal("the change sets were not appended")
	}
	s.Close()
	return snapshot, set1, set2, offs
}

// TestCorruptChangeSet: a change set cut short is left out silently, as a
// crash leaves it; a committed one that does not check out is left out
// with those after it, counted (one change for a change set whose begin
// record is damaged, as how many it held is unknown), and the file moved
// aside.
func TestCorruptChangeSet(t *testing.T) {
	snapshot, set1, set2, offs := changeSetStore(t, storePath(t))
	after0 := resourcesOf(snapshot...)
	after1 := resourcesOf(set1[0], snapshot[2], set1[2])
	after2 := resourcesOf(set1[0], set2[1], set2[0], set1[2])
	both := len(set1) + len(set2)
	for _, tc := range []struct {
		name    string
		change  func(b []byte) []byte
		want    []storage.Resource
		corrupt int
	}{
		{"none", func(b []byte) []byte { return b }, after2, 0},
		{"first set's begin record", func(b []byte) []byte { b[offs[0]+frameLen+3] ^= 1; return b }, after0, 1},
		{"first set's first change", func(b []byte) []byte { b[offs[0]+markLen+frameLen+3] ^= 1; return b }, after0, both},
		{"first set's commit", func(b []byte) []byte { b[offs[1]-1] ^= 1; return b }, after0, both},
		{"second set's size", func(b []byte) []byte { b[offs[1]] = 0xff; return b }, after1, 1},
		{"second set's commit", func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b }, after1, len(set2)},
		{"a commit that states another number of changes", func(b []byte) []byte {
			c := appendMark(nil, kindCommit, uint64(len(b))-uint64(offs[1]), 99)
			return append(b[:len(b)-len(c)], c...)
		}, after1, len(set2)},
		{"second set cut short", func(b []byte) []byte { return b[:len(b)-1] }, after1, 0},
		{"second set cut in its begin record", func(b []byte) []byte { return b[:offs[1]+5] }, after1, 0},
		{"zeros after the second set", func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, after2, 0},
		// What a file system that extends the file before it writes the
		// bytes can leave: the length of a change set whose end is zeros.
		// The reader cannot tell it from a commit damaged, and reports it.
		{"second set's end never written", func(b []byte) []byte {
			clear(b[offs[1]+markLen+4:])
			return b
		}, after1, len(set2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := storePath(t)
			changeSetStore(t, path)
			bad := tc.change(readFile(t, path))
			writeFile(t, path, bad)
			s := mustOpen(t, path, Options{})
			defer s.Close()
			l := mustLoad(t, s, testDigest)
			if d := diffResources(tc.want, l.Resources); d != "" {
				t.Errorf("Load (-want +got):\n%s", d)
			}
			if l.Corrupt != tc.corrupt {
				t.Errorf("Corrupt = %d, want %d", l.Corrupt, tc.corrupt)
			}
			if moved := s.MovedAside(); (moved != "") != (tc.corrupt > 0) {
				t.Errorf("MovedAside() = %q with %d changes lost", moved, tc.corrupt)
			} else if moved != "" && !bytes.Equal(readFile(t, moved), bad) {
				t.Errorf("the file moved aside is not the damaged store")
			}
			// What was left out is gone from the file, and the next change
			// set loads.
			next := clusterPut(9, 4, smallCluster)
			mustApply(t, s, testDigest, next)
			want := append(append([]storage.Resource(nil), tc.want...), next.Resource)
			s.Close()
			s = mustOpen(t, path, Options{})
			l = mustLoad(t, s, testDigest)
			if d := diffResources(want, l.Resources); d != "" {
				t.Errorf("Load after the next change set (-want +got):\n%s", d)
			}
			if l.Corrupt != 0 || s.MovedAside() != "" {
				t.Errorf("after the next change set: Corrupt = %d, MovedAside() = %q", l.Corrupt, s.MovedAside())
			}
		})
	}
}

// TestFileBound: whatever the change sets, the file stays within the
// bound of its compacted size, and what the writer counts as compacted is
// what a rewrite writes.
func TestFileBound(t *testing.T) {
	path := storePath(t)
	s := mustOpen(t, path, Options{})
	defer s.Close()
	rewrites := 0
	for v := range 200 {
		var set []storage.Change
		for i := range 300 {
			switch {
			case (i+v)%7 == 0:
				set = append(set, clusterDelete(i))
			case (i*v)%5 == 1 || v == 0:
				set = append(set, clusterPut(i, v, meshCluster))
			}
		}
		before := s.size
		mustApply(t, s, testDigest, set...)
		if s.size < before {
			rewrites++
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != s.size {
			t.Fatalf("change set %d: the file has %d bytes, the store counts %d", v, fi.Size(), s.size)
		}
		if s.size > limit(s.compacted(), s.raw) {
			t.Fatalf("change set %d: %d bytes, over the bound %d of %d compacted, %d raw", v, s.size, limit(s.compacted(), s.raw), s.compacted(), s.raw)
		}
	}
	compacted, raw := s.compacted(), s.raw
	if rewrites == 0 {
		t.Error("no change set rewrote the store")
	}
	// Compare with a rewrite of the same resources.
	l := mustLoad(t, s, testDigest)
	s2path := filepath.Join(t.TempDir(), "store")
	s2 := mustOpen(t, s2path, Options{})
	defer s2.Close()
	var all []storage.Change
	for _, r := range l.Resources {
		all = append(all, storage.Change{Resource: r})
	}
	mustApply(t, s2, testDigest, all...)
	if s2.size != compacted || s2.compacted() != compacted || s2.raw != raw {
		t.Errorf("a rewrite of the %d resources has %d bytes (%d compacted, %d raw); the store counted %d (%d raw)", len(all), s2.size, s2.compacted(), s2.raw, compacted, raw)
	}
}
