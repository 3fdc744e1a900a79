package relay_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestNewRejects(t *testing.T) {
	bs := &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("127.0.0.1:1")}}
	for _, tc := range []struct {
		name string
		cfg  relay.Config
		want string
	}{
		{"no bootstrap", relay.Config{Upstream: engine.Config{Registry: builtin.Registry()}}, "Config.Upstream.Bootstrap is required"},
		{"no registry", relay.Config{Upstream: engine.Config{Bootstrap: bs}}, "Config.Upstream.Registry is required"},
		{"negative linger", relay.Config{Upstream: engine.Config{Bootstrap: bs, Registry: builtin.Registry()}, Linger: -1}, "Config.Linger must not be negative"},
		{"an upstream store", relay.Config{Upstream: engine.Config{Bootstrap: bs, Registry: builtin.Registry(), Store: &recordingStore{}}}, "set Config.Store"},
		{"no server", relay.Config{Upstream: engine.Config{Bootstrap: &bootstrap.Bootstrap{}, Registry: builtin.Registry()}}, "server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := relay.New(tc.cfg)
			if err == nil {
				r.Close()
				t.Fatalf("New succeeded, want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q in it", err, tc.want)
			}
		})
	}
}

// rawOnly is a resource that only has its bytes.
type rawOnly []byte

func (r rawOnly) Raw() []byte { return r }

func TestDefaultEncoder(t *testing.T) {
	msg := xdstest.Cluster("c", "e")
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := cds.Type.Decode(want, registry.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	enc := relay.DefaultEncoder()
	for _, tc := range []struct {
		name string
		r    registry.Resource
	}{
		{"raw resource: its bytes", rawOnly(want)},
		{"built-in type: its Proto", decoded.Resource},
		{"proto message", msg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := enc.Encode(cds.TypeURL, tc.r)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Encode = %x, %v; want %x", got, err, want)
			}
		})
	}
	if _, err := enc.Encode(cds.TypeURL, struct{}{}); err == nil || !strings.Contains(err.Error(), "has no Raw or Proto method") {
		t.Errorf("Encode of a struct{}: %v, want an error saying it has no Raw or Proto method", err)
	}
}

// recordingStore is an storage.Store that remembers being closed.
type recordingStore struct {
	mu     sync.Mutex
	closed bool
}

func (s *recordingStore) Load([]byte) (storage.Loaded, error)  { return storage.Loaded{}, nil }
func (s *recordingStore) Apply([]byte, []storage.Change) error { return nil }
func (s *recordingStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// TestStorePerKey: each key's engine gets a store of its own, which the
// relay closes after the engine.
func TestStorePerKey(t *testing.T) {
	up := newUpstream(t, "upstream")
	up.Set(meshResources("eds-1")...)
	var mu sync.Mutex
	stores := map[string]*recordingStore{}
	r := newRelay(t, up, relaytest.Options{}, func(c *relay.Config) {
		c.Store = func(key string) (storage.Store, error) {
			mu.Lock()
			defer mu.Unlock()
			if stores[key] != nil {
				t.Errorf("a second store for key %q", key)
			}
			stores[key] = &recordingStore{}
			return stores[key], nil
		}
	})
	for _, key := range []string{"blue", "green"} {
		watch(t, client(t, r, relaytest.BootstrapOptions{NodeID: key, Cluster: key}), cds.TypeURL, "cluster-1").
			waitFor(t, "the cluster", edsName("eds-1"))
	}
	r.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(stores) != 2 {
		t.Fatalf("stores made for keys %v, want blue and green", stores)
	}
	for key, s := range stores {
		if !s.closed {
			t.Errorf("the store of key %q was not closed with the relay", key)
		}
	}
}
