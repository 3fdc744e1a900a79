package lastgood

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/engine/storage"
)

func TestRoundTrip(t *testing.T) {
	path := storePath(t)
	changes := []storage.Change{
		clusterPut(1, 7, smallCluster),
		clusterPut(2, 7, meshCluster),
		{Resource: storage.Resource{
			Authority: "xds.example.com",
			Server:    "fallback.example.com:443",
			TypeURL:   "type.googleapis.com/envoy.config.listener.v3.Listener",
			Name:      "xdstp://xds.example.com/envoy.config.listener.v3.Listener/a",
			Version:   "",
			Raw:       []byte{},
			Received:  time.Time{}, // kept as zero
		}},
		{Resource: storage.Resource{
			Server:   testServer,
			TypeURL:  "type.googleapis.com/acme.Custom",
			Name:     "with\x00nul and ünïcode",
			Version:  "v1",
			Raw:      bytes.Repeat([]byte{0xff, 0}, 40000),
			Received: received,
			Expires:  received.Add(30 * time.Second), // a ttl the server sent
		}},
	}
	s := mustOpen(t, path, Options{})
	mustApply(t, s, testDigest, changes...)
	want := resourcesOf(changes...)
	if d := diffResources(want, mustLoad(t, s, testDigest).Resources); d != "" {
		t.Errorf("Load before Close (-want +got):\n%s", d)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, Options{})
	defer s.Close()
	l := mustLoad(t, s, testDigest)
	if d := diffResources(want, l.Resources); d != "" {
		t.Errorf("Load after reopening (-want +got):\n%s", d)
	}
	if l.Corrupt != 0 {
		t.Errorf("Corrupt = %d, want 0", l.Corrupt)
	}
	if !bytes.Equal(s.Digest(), testDigest) {
		t.Errorf("Digest() = %q, want %q", s.Digest(), testDigest)
	}
	if s.MovedAside() != "" {
		t.Errorf("MovedAside() = %q for a good store", s.MovedAside())
	}
	// Raw bytes are the caller's: each its own, changing one changes no
	// other.
	l.Resources[0].Raw = append(l.Resources[0].Raw, 'x')
	if d := diffResources(want, mustLoad(t, s, testDigest).Resources); d != "" {
		t.Errorf("Load after changing a loaded Raw (-want +got):\n%s", d)
	}
}

func TestChangeSets(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets [][]storage.Change
		want []storage.Change
	}{{
		name: "delete",
		sets: [][]storage.Change{
			{clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster), clusterPut(3, 1, smallCluster)},
			{clusterDelete(2)},
		},
		want: []storage.Change{clusterPut(1, 1, smallCluster), clusterPut(3, 1, smallCluster)},
	}, {
		name: "delete then put again",
		sets: [][]storage.Change{
			{clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster)},
			{clusterDelete(2)},
			{clusterPut(2, 3, smallCluster)},
		},
		want: []storage.Change{clusterPut(1, 1, smallCluster), clusterPut(2, 3, smallCluster)},
	}, {
		name: "delete of a resource never kept",
		sets: [][]storage.Change{
			{clusterPut(1, 1, smallCluster)},
			{clusterDelete(9)},
		},
		want: []storage.Change{clusterPut(1, 1, smallCluster)},
	}, {
		name: "update",
		sets: [][]storage.Change{
			{clusterPut(1, 1, smallCluster), clusterPut(2, 1, meshCluster)},
			{clusterPut(2, 2, meshCluster)},
			{clusterPut(1, 3, smallCluster)},
		},
		want: []storage.Change{clusterPut(1, 3, smallCluster), clusterPut(2, 2, meshCluster)},
	}, {
		name: "the last change of a name in a set counts",
		sets: [][]storage.Change{
			{clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster)},
			{clusterPut(1, 2, smallCluster), clusterDelete(1), clusterDelete(2), clusterPut(2, 2, smallCluster)},
		},
		want: []storage.Change{clusterPut(2, 2, smallCluster)},
	}, {
		name: "same name, other type or authority",
		sets: [][]storage.Change{{
			clusterPut(1, 1, smallCluster),
			{Resource: storage.Resource{TypeURL: "type.googleapis.com/acme.Other", Name: "cluster-00001", Raw: []byte("o")}},
			{Resource: storage.Resource{Authority: "a.example", TypeURL: clusterType, Name: "cluster-00001", Raw: []byte("a")}},
		}, {
			{Delete: true, Resource: storage.Resource{TypeURL: "type.googleapis.com/acme.Other", Name: "cluster-00001"}},
		}},
		want: []storage.Change{
			clusterPut(1, 1, smallCluster),
			{Resource: storage.Resource{Authority: "a.example", TypeURL: clusterType, Name: "cluster-00001", Raw: []byte("a")}},
		},
	}, {
		name: "one server's resource moves to another",
		sets: [][]storage.Change{
			{clusterPut(1, 1, smallCluster)},
			{func() storage.Change { c := clusterPut(1, 2, smallCluster); c.Server = "fallback:1"; return c }()},
		},
		want: []storage.Change{func() storage.Change { c := clusterPut(1, 2, smallCluster); c.Server = "fallback:1"; return c }()},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			path := storePath(t)
			s := mustOpen(t, path, Options{})
			for _, set := range tc.sets {
				mustApply(t, s, testDigest, set...)
			}
			want := resourcesOf(tc.want...)
			if d := diffResources(want, mustLoad(t, s, testDigest).Resources); d != "" {
				t.Errorf("Load (-want +got):\n%s", d)
			}
			s.Close()
			s = mustOpen(t, path, Options{})
			defer s.Close()
			if d := diffResources(want, mustLoad(t, s, testDigest).Resources); d != "" {
				t.Errorf("Load after reopening (-want +got):\n%s", d)
			}
			// A rewrite keeps the same content.
			mustApply(t, s, []byte("other"))
			mustApply(t, s, testDigest, tc.want...)
			if d := diffResources(want, mustLoad(t, s, testDigest).Resources); d != "" {
				t.Errorf("Load after a rewrite (-want +got):\n%s", d)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	path := storePath(t)
	s := mustOpen(t, path, Options{})
	defer s.Close()
	if l := mustLoad(t, s, testDigest); len(l.Resources) != 0 {
		t.Errorf("a new store loaded %d resources", len(l.Resources))
	}
	first := []storage.Change{clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster)}
	mustApply(t, s, testDigest, first...)

	other := []byte("another node")
	if l := mustLoad(t, s, other); len(l.Resources) != 0 || l.Corrupt != 0 {
		t.Errorf("Load with another digest = %+v, want nothing", l)
	}
	// Applying with another digest replaces the store: the deletes of the
	// change set have nothing to delete.
	second := []storage.Change{clusterPut(3, 2, smallCluster), clusterDelete(1)}
	mustApply(t, s, other, second...)
	if l := mustLoad(t, s, testDigest); len(l.Resources) != 0 {
		t.Errorf("the old digest still loads %d resources", len(l.Resources))
	}
	if d := diffResources(resourcesOf(second...), mustLoad(t, s, other).Resources); d != "" {
		t.Errorf("Load with the new digest (-want +got):\n%s", d)
	}
	if !bytes.Equal(s.Digest(), other) {
		t.Errorf("Digest() = %q, want %q", s.Digest(), other)
	}
	s.Close()

	s = mustOpen(t, path, Options{})
	defer s.Close()
	if d := diffResources(resourcesOf(second...), mustLoad(t, s, other).Resources); d != "" {
		t.Errorf("Load after reopening (-want +got):\n%s", d)
	}
	// An empty change set with a new digest empties the store.
	mustApply(t, s, nil)
	if l := mustLoad(t, s, other); len(l.Resources) != 0 {
		t.Errorf("after an empty change set with the nil digest, the old one loads %d", len(l.Resources))
	}
	if l := mustLoad(t, s, nil); len(l.Resources) != 0 {
		t.Errorf("the nil digest loads %d", len(l.Resources))
	}
}

func TestPermissions(t *testing.T) {
	t.Run("created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		path := filepath.Join(dir, "store")
		s := mustOpen(t, path, Options{})
		// A rewrite replaces the file: its mode must hold too.
		mustApply(t, s, testDigest, clusterPut(1, 1, smallCluster))
		mustApply(t, s, []byte("other"), clusterPut(1, 1, smallCluster))
		defer s.Close()
		for p, want := range map[string]fs.FileMode{
			dir:               fs.ModeDir | 0o700,
			filepath.Dir(dir): fs.ModeDir | 0o700,
			path:              0o600,
			path + ".lock":    0o600,
		} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != want {
				t.Errorf("%s has mode %s, want %s", p, fi.Mode(), want)
			}
		}
	})
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir, path string)
		want    string
	}{{
		name:    "directory others can write",
		prepare: func(t *testing.T, dir, _ string) { chmod(t, dir, 0o757) },
		want:    "directory %[1]s has mode 0757, which lets others write to it (0002), and so replace the store: run chmod go-w %[1]s, or give the store a directory of its own",
	}, {
		name:    "directory its group can write",
		prepare: func(t *testing.T, dir, _ string) { chmod(t, dir, 0o1770) },
		want:    "directory %[1]s has mode 0770, which lets others write to it (0020)",
	}, {
		name: "file others can read",
		prepare: func(t *testing.T, _, path string) {
			s := mustOpen(t, path, Options{})
			s.Close()
			chmod(t, path, 0o644)
		},
		want: "file %[2]s has mode 0644, which lets others in (0044); want 0600: run chmod 600 %[2]s",
	}, {
		name: "file its group can write",
		prepare: func(t *testing.T, _, path string) {
			s := mustOpen(t, path, Options{})
			s.Close()
			chmod(t, path, 0o620)
		},
		want: "file %[2]s has mode 0620, which lets others in (0020)",
	}, {
		name: "not a file",
		prepare: func(t *testing.T, _, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		},
		want: "%[2]s is not a regular file",
	}, {
		name: "symbolic link",
		prepare: func(t *testing.T, dir, path string) {
			target := filepath.Join(dir, "elsewhere")
			s := mustOpen(t, target, Options{})
			s.Close()
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		},
		want: "%[2]s is not a regular file",
	}, {
		name: "directory is a file",
		prepare: func(t *testing.T, dir, _ string) {
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		want: "%[1]s is not a directory",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "store")
			tc.prepare(t, dir, path)
			s, err := Open(path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if want := fmt.Sprintf(tc.want, dir, path); !strings.Contains(err.Error(), want) {
				t.Errorf("Open: %v\nwant an error containing %q", err, want)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, 0o700) })
}

// TestPermissionsListable: a directory the store did not create may let
// others list it, not write to it.
func TestPermissionsListable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	chmod(t, dir, 0o755)
	s := mustOpen(t, filepath.Join(dir, "store"), Options{})
	s.Close()
}

func TestLockInProcess(t *testing.T) {
	path := storePath(t)
	s := mustOpen(t, path, Options{})
	for _, timeout := range []time.Duration{-1, 100 * time.Millisecond} {
		start := time.Now()
		s2, err := Open(path, Options{LockTimeout: timeout})
		elapsed := time.Since(start)
		if err == nil {
			s2.Close()
			t.Fatalf("a second Open (timeout %v) succeeded", timeout)
		}
		if !errors.Is(err, ErrLocked) {
			t.Errorf("error %v is not ErrLocked", err)
		}
		if want := "the store is in use by another process: " + path + " (its lock " + path + ".lock is held"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
		if elapsed < timeout || elapsed > timeout+time.Second {
			t.Errorf("the second Open (timeout %v) took %v", timeout, elapsed)
		}
	}
	// The lock is released by Close, and Open waits for it.
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.Close()
	}()
	s2 := mustOpen(t, path, Options{LockTimeout: 5 * time.Second})
	s2.Close()
}

func TestReadOnly(t *testing.T) {
	path := storePath(t)
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open of no store: %v, want fs.ErrNotExist", err)
	}
	w := mustOpen(t, path, Options{})
	defer w.Close()
	first := []storage.Change{clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster)}
	mustApply(t, w, testDigest, first...)

	// A reader opens and reads while the writer holds the lock.
	r := mustOpen(t, path, Options{ReadOnly: true, LockTimeout: -1})
	defer r.Close()
	if !bytes.Equal(r.Digest(), testDigest) {
		t.Errorf("reader's Digest() = %q", r.Digest())
	}
	if d := diffResources(resourcesOf(first...), mustLoad(t, r, testDigest).Resources); d != "" {
		t.Errorf("reader's Load (-want +got):\n%s", d)
	}
	// Each Load reads the file as it is then: appended, then rewritten.
	mustApply(t, w, testDigest, clusterDelete(1))
	if d := diffResources(resourcesOf(first[1]), mustLoad(t, r, testDigest).Resources); d != "" {
		t.Errorf("reader's Load after an append (-want +got):\n%s", d)
	}
	mustApply(t, w, []byte("other"), first[0])
	if d := diffResources(resourcesOf(first[0]), mustLoad(t, r, []byte("other")).Resources); d != "" {
		t.Errorf("reader's Load after a rewrite (-want +got):\n%s", d)
	}
	if err := r.Apply(testDigest, first); !errors.Is(err, ErrReadOnly) {
		t.Errorf("reader's Apply: %v, want ErrReadOnly", err)
	}

	// A reader does not repair or move anything.
	if err := os.WriteFile(path+"-junk", []byte("not a store"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path+"-junk", Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("read-only Open of junk: %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(path + "-junk"); err != nil {
		t.Errorf("the junk file is gone: %v", err)
	}
}

func TestClosed(t *testing.T) {
	s := mustOpen(t, storePath(t), Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Load(testDigest); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close: %v", err)
	}
	if err := s.Apply(testDigest, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Close: %v", err)
	}
}

func TestApplyRefuses(t *testing.T) {
	s := mustOpen(t, storePath(t), Options{})
	defer s.Close()
	for _, tc := range []struct {
		name    string
		digest  []byte
		changes []storage.Change
		want    string
	}{
		{"no type URL", testDigest, []storage.Change{clusterPut(1, 1, smallCluster), {}}, "lastgood: Apply: changes[1].TypeURL: must not be empty"},
		{"long digest", make([]byte, 1025), nil, "lastgood: Apply: the digest has 1025 bytes; at most 1024"},
	} {
		if err := s.Apply(tc.digest, tc.changes); err == nil || err.Error() != tc.want {
			t.Errorf("%s: Apply: %v, want %q", tc.name, err, tc.want)
		}
	}
	// Nothing was written.
	if l := mustLoad(t, s, testDigest); len(l.Resources) != 0 {
		t.Errorf("a refused change set left %d resources", len(l.Resources))
	}
}

// TestLeftoverTemporaryFiles: a rewrite cut short by a crash leaves
// PATH.tmp-*, which the next Open removes, and nothing else.
func TestLeftoverTemporaryFiles(t *testing.T) {
	path := storePath(t)
	s := mustOpen(t, path, Options{})
	mustApply(t, s, testDigest, clusterPut(1, 1, smallCluster))
	s.Close()
	for _, name := range []string{path + ".tmp-123", path + ".tmp-", path + "x.tmp-1"} {
		if err := os.WriteFile(name, []byte("half a store"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s = mustOpen(t, path, Options{})
	defer s.Close()
	for name, want := range map[string]bool{path + ".tmp-123": false, path + ".tmp-": false, path + "x.tmp-1": true} {
		if _, err := os.Stat(name); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}
	if l := mustLoad(t, s, testDigest); len(l.Resources) != 1 {
		t.Errorf("loaded %d resources, want 1", len(l.Resources))
	}
}
