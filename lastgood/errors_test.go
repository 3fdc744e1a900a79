package lastgood

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// TestFailedAppend: a change set that could not be written is not in the
// store, and the next one writes the store anew.
func TestFailedAppend(t *testing.T) {
	path := storePath(t)
	s := mustOpen(t, path, Options{})
	defer s.Close()
	a := []storage.Change{clusterPut(1, 1, smallCluster), clusterPut(2, 1, smallCluster)}
	mustApply(t, s, testDigest, a...)

	// The file fails under the store (as a disk that fails would).
	s.f.Close()
	b := []storage.Change{clusterDelete(1), clusterPut(3, 2, smallCluster)}
	err := s.Apply(testDigest, b)
	if err == nil || !strings.Contains(err.Error(), "lastgood: writing a change set to "+path) {
		t.Fatalf("Apply on a failed file: %v", err)
	}
	if s.f, err = os.OpenFile(path, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}

	c := []storage.Change{clusterPut(4, 3, smallCluster)}
	mustApply(t, s, testDigest, c...)
	if s.size != s.compacted() {
		t.Errorf("the change set after a failed one was appended (%d bytes, %d compacted), not rewritten", s.size, s.compacted())
	}
	want := resourcesOf(append(a, c...)...)
	if d := diffResources(want, mustLoad(t, s, testDigest).Resources); d != "" {
		t.Errorf("Load (-want +got):\n%s", d)
	}
	s.Close()
	s = mustOpen(t, path, Options{})
	if d := diffResources(want, mustLoad(t, s, testDigest).Resources); d != "" {
		t.Errorf("Load after reopening (-want +got):\n%s", d)
	}
}

// TestFailedRewrite: a rewrite that fails leaves the store as it was, and
// no temporary file.
func TestFailedRewrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store")
	s := mustOpen(t, path, Options{})
	defer s.Close()
	a := []storage.Change{clusterPut(1, 1, smallCluster)}
	mustApply(t, s, testDigest, a...)

	// A directory where the store was: the rename fails.
	if err := os.Rename(path, path+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "in"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := s.Apply([]byte("other"), []storage.Change{clusterPut(2, 2, smallCluster)})
	if err == nil || !strings.Contains(err.Error(), "lastgood: rewriting the store: rename ") {
		t.Fatalf("Apply: %v", err)
	}
	if temps, _ := filepath.Glob(path + ".tmp-*"); len(temps) != 0 {
		t.Errorf("temporary files left: %q", temps)
	}
	if d := diffResources(resourcesOf(a...), mustLoad(t, s, testDigest).Resources); d != "" {
		t.Errorf("Load after the failed rewrite (-want +got):\n%s", d)
	}

	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".away", path); err != nil {
		t.Fatal(err)
	}
	c := []storage.Change{clusterPut(3, 3, smallCluster)}
	mustApply(t, s, testDigest, c...)
	s.Close()
	s = mustOpen(t, path, Options{})
	if d := diffResources(resourcesOf(append(a, c...)...), mustLoad(t, s, testDigest).Resources); d != "" {
		t.Errorf("Load after reopening (-want +got):\n%s", d)
	}
}
