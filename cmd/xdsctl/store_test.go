package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/lastgood"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
)

var storeDigest = sha256.Sum256([]byte("node and bootstrap"))

// storeChanges are what the tests keep, received at times before now.
func storeChanges(now time.Time) []storage.Change {
	put := func(r storage.Resource) storage.Change { return storage.Change{Resource: r} }
	return []storage.Change{
		put(storage.Resource{Server: "xds.example.com:443", TypeURL: cds.TypeURL, Name: "cluster-b", Version: "7",
			Raw: []byte("cluster b"), Received: now.Add(-2*time.Minute - 13*time.Second)}),
		put(storage.Resource{Server: "xds.example.com:443", TypeURL: cds.TypeURL, Name: "cluster-a", Version: "7",
			Raw: []byte("cluster a"), Received: now.Add(-2*time.Minute - 13*time.Second)}),
		put(storage.Resource{Authority: "xds.example.com", Server: "fallback.example.com:443", TypeURL: lds.TypeURL,
			Name: "xdstp://xds.example.com/envoy.config.listener.v3.Listener/l", Version: "3",
			Raw: []byte("listener"), Received: now.Add(-26 * time.Hour)}),
		put(storage.Resource{TypeURL: "type.googleapis.com/acme.v1.Custom", Name: "with space\n", Raw: []byte("custom")}),
	}
}

func TestStoreListing(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	changes := storeChanges(now)
	var l storage.Loaded
	for _, c := range changes {
		l.Resources = append(l.Resources, c.Resource)
	}
	l.Corrupt = 2
	want := `store /x/lastgood: format 2, digest 12d5a78b819f5c64…, 4 resources, 2 corrupt
TYPE      NAME                                                         VERSION  AGE      SERVER
Cluster   cluster-a                                                    7        2m13s    xds.example.com:443
Cluster   cluster-b                                                    7        2m13s    xds.example.com:443
Custom    "with space\n"                                               -        -        -
Listener  xdstp://xds.example.com/envoy.config.listener.v3.Listener/l  3        26h0m0s  fallback.example.com:443
`
	if got := storeListing("/x/lastgood", storeDigest[:], l, now); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	for _, tc := range []struct {
		digest []byte
		want   string
	}{
		{nil, "store p: format 2, digest none, 0 resources, 0 corrupt\n"},
		{[]byte{1, 2}, "store p: format 2, digest 0102, 0 resources, 0 corrupt\n"},
	} {
		if got := storeListing("p", tc.digest, storage.Loaded{}, now); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestStoreCommand lists a store an engine (a writer) still holds: the
// command does not wait for the lock.
func TestStoreCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lastgood")
	w, err := lastgood.Open(path, lastgood.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Apply(storeDigest[:], storeChanges(time.Now())); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	r := runSync(t, "store", path)
	if took := time.Since(start); took > lastgood.DefaultLockTimeout/2 {
		t.Errorf("store took %v with the store held by a writer", took)
	}
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("exit status %d, stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	if want := "store " + path + ": format 2, digest " + hex.EncodeToString(storeDigest[:8]) + "…, 4 resources, 0 corrupt"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	for i, want := range []string{"TYPE ", "Cluster   cluster-a ", "Cluster   cluster-b ", "Custom    \"with space\\n\" ", "Listener  xdstp:"} {
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], want) {
			t.Errorf("line %d does not begin with %q:\n%s", i+2, want, r.stdout)
		}
	}
	if !strings.Contains(lines[2], "  2m1") || !strings.Contains(lines[5], "  26h0m") {
		t.Errorf("ages are not as received:\n%s", r.stdout)
	}
}

// TestStoreCorrupt: a resource that does not check out is counted, and
// the file is left as it is.
func TestStoreCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lastgood")
	w, err := lastgood.Open(path, lastgood.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(storeDigest[:], storeChanges(time.Now())); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[bytes.Index(b, []byte("cluster b"))] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runSync(t, "store", path)
	if r.code != exitOK {
		t.Fatalf("exit status %d, stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, ", 3 resources, 1 corrupt\n") || strings.Contains(r.stdout, "cluster-b") {
		t.Errorf("the corrupt resource is not left out and counted:\n%s", r.stdout)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, b) {
		t.Error("listing the store changed it")
	}
}

func TestStoreFailures(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("not a store"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"help", "store"}, exitOK, "Usage: xdsctl store PATH", ""},
		{[]string{"store", "-h"}, exitOK, "Usage: xdsctl store PATH", ""},
		{[]string{"store"}, exitUsage, "", "xdsctl store: want exactly one PATH, got 0 argument(s)\nRun 'xdsctl store -h' for usage.\n"},
		{[]string{"store", "a", "b"}, exitUsage, "", "xdsctl store: want exactly one PATH, got 2 argument(s)\n"},
		{[]string{"store", "--bootstrap", "x", "a"}, exitUsage, "", "flag provided but not defined: -bootstrap"},
		{[]string{"store", filepath.Join(dir, "none")}, exitFailure, "", "xdsctl store: lastgood: reading the store: open " + filepath.Join(dir, "none") + ": no such file or directory\n"},
		{[]string{"store", junk}, exitFailure, "", "xdsctl store: lastgood: the store cannot be read: " + junk + ": not a lastgood store (bad magic bytes)\n"},
	} {
		r := runSync(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%q: exit status %d, stdout:\n%s\nstderr:\n%s\nwant %d, %q, %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	if b, _ := os.ReadFile(junk); string(b) != "not a store" {
		t.Error("the unreadable store was changed")
	}
}
