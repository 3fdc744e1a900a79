package lastgood

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// fuzzStore is a small store whose file holds a snapshot and two change
// sets, and the three states it went through.
type fuzzStore struct {
	file   []byte
	states []map[key]storage.Resource
	// ends[i] is where the snapshot (0) or change set i ends in file.
	ends []int64
	// changes counts the changes written: at most what can be lost.
	changes int
}

func newFuzzStore(f *testing.F) fuzzStore {
	path := filepath.Join(f.TempDir(), "store")
	other := storage.Change{Resource: storage.Resource{
		Authority: "a.example", Server: "fallback:443", TypeURL: "type.googleapis.com/acme.Other",
		Name: "xdstp://a.example/acme.Other/o", Version: "9", Raw: []byte("other"), Received: received,
	}}
	sets := [][]storage.Change{
		{clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster), clusterPut(3, 1, smallCluster), clusterPut(4, 1, smallCluster)},
		{clusterPut(1, 2, smallCluster), clusterDelete(2), other},
		{clusterPut(3, 3, smallCluster), clusterPut(2, 3, smallCluster), clusterDelete(4)},
	}
	s, err := Open(path, Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	fs := fuzzStore{}
	state := map[key]storage.Resource{}
	for i, set := range sets {
		if i == 0 {
			err = s.Apply([]byte("first"), nil) // so that set 0 is a snapshot
		}
		if err == nil {
			err = s.Apply(testDigest, set)
		}
		if err != nil {
			f.Fatal(err)
		}
		fs.ends = append(fs.ends, s.size)
		fs.changes += len(set)
		state = maps.Clone(state)
		for _, c := range set {
			k := key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}
			if c.Delete {
				delete(state, k)
			} else {
				state[k] = c.Resource
			}
		}
		fs.states = append(fs.states, state)
	}
	if fs.file, err = os.ReadFile(path); err != nil {
		f.Fatal(err)
	}
	return fs
}

// check fails unless every resource loaded is the one some single state
// held under its key: never bytes that were not written, never a mix of
// two states.
func (fs fuzzStore) check(t *testing.T, l storage.Loaded) {
	t.Helper()
	for _, state := range fs.states {
		ok := true
		for _, r := range l.Resources {
			want, found := state[key{authority: r.Authority, typeURL: r.TypeURL, name: r.Name}]
			if !found || diffResources([]storage.Resource{want}, []storage.Resource{r}) != "" {
				ok = false
				break
			}
		}
		if ok {
			return
		}
	}
	t.Fatalf("loaded resources that no state held together: %+v", l.Resources)
}

// checkNotRolledBack fails unless a Load of the file b that reported
// nothing (no resource counted corrupt, nothing moved aside) returned the
// state after the last change set the file holds whole: b may be cut
// short, as by a crash, but a damaged byte must not silently take the
// store back to an older state.
func (fs fuzzStore) checkNotRolledBack(t *testing.T, b []byte, l storage.Loaded) {
	t.Helper()
	last := 0
	for i, end := range fs.ends {
		if end <= int64(len(b)) {
			last = i
		}
	}
	if d := diffResources(slices.Collect(maps.Values(fs.states[last])), l.Resources); d != "" {
		t.Fatalf("nothing reported, but the file of %d bytes (states end at %v) did not load the state after change set %d (-want +got):\n%s",
			len(b), fs.ends, last, d)
	}
}

// corrupt applies a fuzzer's patch to the file: each three bytes are an
// offset (two bytes, modulo the file's length) and a byte to XOR there;
// cut, when not 0, cuts that many bytes off the end.
func corrupt(file, patch []byte, cut uint16) []byte {
	b := bytes.Clone(file)
	for ; len(patch) >= 3; patch = patch[3:] {
		off := int(binary.BigEndian.Uint16(patch)) % len(b)
		b[off] ^= patch[2]
	}
	if int(cut) < len(b) {
		b = b[:len(b)-int(cut)]
	}
	return b
}

// FuzzCorruptStore opens a real store file with bytes corrupted at
// random offsets: Open never fails and nothing panics, Load returns only
// resources as they were written, of one state the store was in, and the
// store then works.
func FuzzCorruptStore(f *testing.F) {
	fs := newFuzzStore(f)
	h, hlen, err := parseHeader(fs.file)
	if err != nil {
		f.Fatal(err)
	}
	at := func(off int64, x byte) []byte { return []byte{byte(off >> 8), byte(off), x} }
	f.Add([]byte{}, uint16(0))
	f.Add(at(0, 1), uint16(0))                     // magic
	f.Add(at(int64(hlen)+2, 1), uint16(0))         // the first record's size
	f.Add(at(int64(hlen)+20, 0x40), uint16(0))     // a source
	f.Add(at(h.indexOff+9, 1), uint16(0))          // the index
	f.Add(at(h.snapshotEnd+1, 1), uint16(0))       // the first change set
	f.Add(at(int64(len(fs.file)-1), 1), uint16(0)) // the last commit
	f.Add(append(at(int64(hlen)+30, 7), at(h.snapshotEnd+30, 7)...), uint16(0))
	f.Add([]byte{}, uint16(5))
	f.Add([]byte{}, uint16(len(fs.file)-int(h.snapshotEnd)+3))
	f.Fuzz(func(t *testing.T, patch []byte, cut uint16) {
		b := corrupt(fs.file, patch, cut)
		path := filepath.Join(t.TempDir(), "store")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}

		// A reader reads it as it is, or says it cannot.
		if r, err := Open(path, Options{ReadOnly: true}); err == nil {
			l, err := r.Load(testDigest)
			if err != nil {
				t.Fatalf("read-only Load: %v", err)
			}
			fs.check(t, l)
			if l.Corrupt == 0 {
				fs.checkNotRolledBack(t, b, l)
			}
			r.Close()
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("read-only Open: %v", err)
		}

		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		l, err := s.Load(testDigest)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if l.Corrupt < 0 || l.Corrupt > fs.changes {
			t.Errorf("Corrupt = %d; %d changes were written", l.Corrupt, fs.changes)
		}
		fs.check(t, l)
		// Moved aside: unreadable, and a new store starts empty; or a
		// change set damaged, and the store goes on from before it, which
		// Corrupt reports.
		if s.MovedAside() != "" && l.Corrupt == 0 && len(l.Resources) != 0 {
			t.Errorf("a store moved aside loaded %d resources, none corrupt", len(l.Resources))
		}
		if s.MovedAside() == "" && l.Corrupt == 0 {
			fs.checkNotRolledBack(t, b, l)
		}
		if len(patch) < 3 && cut == 0 && len(l.Resources) != len(fs.states[len(fs.states)-1]) {
			t.Errorf("the store as written loaded %d resources, want %d", len(l.Resources), len(fs.states[len(fs.states)-1]))
		}

		// The store works after it: a change set is kept on top of what
		// was loaded.
		next := clusterPut(7, 7, smallCluster)
		if err := s.Apply(testDigest, []storage.Change{next}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		after, err := s.Load(testDigest)
		if err != nil {
			t.Fatalf("Load after Apply: %v", err)
		}
		if d := diffResources(append(l.Resources, next.Resource), after.Resources); d != "" {
			t.Errorf("Load after Apply (-want +got):\n%s", d)
		}
	})
}
