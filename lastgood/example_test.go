package lastgood_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/lastgood"
)

// exampleDir is a directory for an example's store, removed by cleanup.
func exampleDir() (dir string, cleanup func()) {
	dir, err := os.MkdirTemp("", "lastgood-example")
	if err != nil {
		log.Fatal(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}

const clusterType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// digest stands for the engine's digest of the node and the bootstrap.
var digest = []byte("node and bootstrap")

func cluster(name, version string) storage.Change {
	return storage.Change{Resource: storage.Resource{
		Server: "xds.example.com:443", TypeURL: clusterType, Name: name, Version: version,
		Raw: []byte("the Cluster's bytes"), Received: time.Now(),
	}}
}

func names(l storage.Loaded) []string {
	var out []string
	for _, r := range l.Resources {
		out = append(out, r.Name+"@"+r.Version)
	}
	slices.Sort(out)
	return out
}

// Open a store for an engine: the directory is created 0700 and the file
// 0600; engine.Config.Store takes it.
func ExampleOpen() {
	dir, cleanup := exampleDir()
	defer cleanup()

	store, err := lastgood.Open(filepath.Join(dir, "xds", "lastgood"), lastgood.Options{})
	if err != nil {
		log.Fatal(err) // permissions to fix, or another process holds the store
	}
	defer store.Close()
	var _ storage.Store = store // engine.New(engine.Config{..., Store: store})

	for _, name := range []string{"xds", "xds/lastgood"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(name, fi.Mode().Perm())
	}
	// Output:
	// xds -rwx------
	// xds/lastgood -rw-------
}

// A second writer on the same store, in this process or another, fails
// after the lock timeout, naming the store.
func ExampleOpen_inUse() {
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "lastgood")

	first, err := lastgood.Open(path, lastgood.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer first.Close()
	_, err = lastgood.Open(path, lastgood.Options{LockTimeout: 50 * time.Millisecond})
	fmt.Println(errors.Is(err, lastgood.ErrLocked))
	fmt.Println(strings.Contains(err.Error(), path))
	// Output:
	// true
	// true
}

// A tool reads a store while its engine runs: a reader takes no lock and
// sees whole change sets only.
func ExampleOpen_readOnly() {
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "lastgood")

	writer, err := lastgood.Open(path, lastgood.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer writer.Close()
	if err := writer.Apply(digest, []storage.Change{cluster("a", "1")}); err != nil {
		log.Fatal(err)
	}

	reader, err := lastgood.Open(path, lastgood.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer reader.Close()
	l, err := reader.Load(reader.Digest())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(names(l))
	fmt.Println(errors.Is(reader.Apply(digest, nil), lastgood.ErrReadOnly))
	// Output:
	// [a@1]
	// true
}

// Apply writes a change set: resources to keep, and resources to forget.
func ExampleStore_Apply() {
	dir, cleanup := exampleDir()
	defer cleanup()
	store, err := lastgood.Open(filepath.Join(dir, "lastgood"), lastgood.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	if err := store.Apply(digest, []storage.Change{cluster("a", "1"), cluster("b", "1")}); err != nil {
		log.Fatal(err)
	}
	forgetA := storage.Change{Delete: true, Resource: storage.Resource{TypeURL: clusterType, Name: "a"}}
	if err := store.Apply(digest, []storage.Change{forgetA, cluster("b", "2")}); err != nil {
		log.Fatal(err)
	}
	l, err := store.Load(digest)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(names(l))
	// Output: [b@2]
}

// Load returns what the store keeps for a digest: nothing for a store
// written for another node or bootstrap, until a change set with the new
// digest replaces it.
func ExampleStore_Load() {
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "lastgood")
	store, err := lastgood.Open(path, lastgood.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Apply(digest, []storage.Change{cluster("a", "1")}); err != nil {
		log.Fatal(err)
	}
	store.Close()

	// The next start.
	store, err = lastgood.Open(path, lastgood.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	for _, d := range [][]byte{digest, []byte("another node")} {
		l, err := store.Load(d)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %v, %d corrupt\n", d, names(l), l.Corrupt)
	}
	// Output:
	// node and bootstrap: [a@1], 0 corrupt
	// another node: [], 0 corrupt
}

// Close releases the store: another writer may open it.
func ExampleStore_Close() {
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "lastgood")
	store, err := lastgood.Open(path, lastgood.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Close(); err != nil {
		log.Fatal(err)
	}
	again, err := lastgood.Open(path, lastgood.Options{LockTimeout: -1})
	fmt.Println(err)
	again.Close()
	// Output: <nil>
}

// Digest says which node and bootstrap the store was last written for.
func ExampleStore_Digest() {
	dir, cleanup := exampleDir()
	defer cleanup()
	store, err := lastgood.Open(filepath.Join(dir, "lastgood"), lastgood.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	fmt.Printf("%q\n", store.Digest())
	if err := store.Apply(digest, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", store.Digest())
	// Output:
	// ""
	// "node and bootstrap"
}

// A store that cannot be read is moved aside, and Open starts an empty
// one.
func ExampleStore_MovedAside() {
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "lastgood")
	if err := os.WriteFile(path, []byte("not a store"), 0o600); err != nil {
		log.Fatal(err)
	}
	store, err := lastgood.Open(path, lastgood.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	moved := store.MovedAside()
	fmt.Println(strings.TrimPrefix(moved, path)[:len(".corrupt-")])
	kept, err := os.ReadFile(moved)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(kept))
	// Output:
	// .corrupt-
	// not a store
}
