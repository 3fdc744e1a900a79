package engine

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

const thingURL = "type.googleapis.com/test.Thing"

// thing decodes "name" or "name|server" (the URI the decoder was given
// must be server) and rejects a name ending in "!", as a registry's
// type would.
var thing = registry.ResourceType{TypeURL: thingURL, Name: "Thing",
	Decoder: registry.DecoderFunc(func(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
		name, server, hasServer := strings.Cut(string(raw), "|")
		if strings.HasSuffix(name, "!") {
			return registry.DecodeResult{Name: name}, errors.New("invalid")
		}
		if hasServer && server != opts.Server.URI {
			return registry.DecodeResult{Name: name}, errors.New("decoded for server " + opts.Server.URI)
		}
		return registry.DecodeResult{Name: name, Resource: name}, nil
	})}

var notStored = registry.ResourceType{TypeURL: "type.googleapis.com/test.Secret", Name: "Secret", NotStored: true,
	Decoder: thing.Decoder}

// storeEngine is an engine with authorities "a" (servers s1, s2) and "b"
// (server s3), whose names are xdstp://a/test.Thing/..., for the store's
// decoding; it connects to nothing.
func storeEngine(t *testing.T, mp *sdkmetric.MeterProvider, log *slog.Logger) *Engine {
	t.Helper()
	bs := &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("s0")}, Node: bootstrap.Node{ID: "n"},
		Authorities: map[string]bootstrap.Authority{
			"a": {Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("s1"), bootstrap.InsecureServer("s2")}},
			"b": {Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("s3")}},
		}}
	cfg := Config{Bootstrap: bs, Registry: registry.MustNew(thing, notStored), Switches: &features.Switches{}, Logger: log}
	if mp != nil {
		cfg.MeterProvider = mp
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func thingName(auth, id string) string { return "xdstp://" + auth + "/test.Thing/" + id }

func stored(typeURL, name, server, raw string) storage.Resource {
	return storage.Resource{TypeURL: typeURL, Name: name, Server: server, Version: "v1", Raw: []byte(raw)}
}

// TestDecodeStored: a stored resource is served only when its type is
// stored, its name resolves, its server is its authority's and its bytes
// validate as the resource of its name, decoded for that server.
func TestDecodeStored(t *testing.T) {
	e := storeEngine(t, nil, nil)
	ax, ay, bx, cx := thingName("a", "x"), thingName("a", "y"), thingName("b", "x"), thingName("c", "x")
	for _, tc := range []struct {
		name     string
		in       storage.Resource
		wantAuth string
		wantErr  string
	}{
		{"valid", stored(thingURL, ax, "s2", ax+"|s2"), "a", ""},
		{"unknown type", stored("type.googleapis.com/test.Gone", ax, "s1", ax), "", "not registered"},
		{"type not stored", stored(notStored.TypeURL, ax, "s1", ax), "", "not stored"},
		{"name does not resolve", stored(thingURL, cx, "s1", cx), "", "not in the bootstrap"},
		{"server not the authority's", stored(thingURL, bx, "s1", bx), "", "server s1 is not one of"},
		{"invalid bytes", stored(thingURL, ax, "s1", ax+"!"), "", "invalid"},
		{"bytes of another resource", stored(thingURL, ax, "s1", ay), "", `the bytes are of resource "` + ay + `"`},
	} {
		a, name, s, err := e.decodeStored(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || s != nil {
				t.Errorf("%s: decodeStored = %v, %v; want an error with %q", tc.name, s, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: decodeStored: %v", tc.name, err)
		}
		if a.name != tc.wantAuth || name != (storedName{thingURL, tc.in.Name}) || s.value != tc.in.Name || s.server.URI != tc.in.Server ||
			s.version != "v1" || string(s.raw) != string(tc.in.Raw) {
			t.Errorf("%s: decodeStored = %q, %v, %+v", tc.name, a.name, name, s)
		}
	}
}

// loadedStore is a storage.Store that returns what it is given.
type loadedStore struct {
	loaded storage.Loaded
	err    error
}

func (s loadedStore) Load([]byte) (storage.Loaded, error) { return s.loaded, s.err }
func (loadedStore) Apply([]byte, []storage.Change) error  { return nil }
func (loadedStore) Close() error                          { return nil }

// TestLoadStore: resources are indexed by authority, then type and key;
// a failed load, corrupt resources, each resource dropped are counted
// and logged; what is past serving is not decoded, and is to be
// forgotten.
func TestLoadStore(t *testing.T) {
	now := time.Unix(1e9, 0)
	old := stored(thingURL, thingName("a", "old"), "s1", thingName("a", "old"))
	old.Received = now.Add(-2 * time.Hour)
	for _, tc := range []struct {
		name    string
		rs      []storage.Resource
		corrupt int
		err     error
		want    map[string]int // authority: resources
		expired int
		counts  map[string]int64
		logs    []string
	}{
		{"all valid", []storage.Resource{stored(thingURL, thingName("a", "x"), "s1", thingName("a", "x")),
			stored(thingURL, thingName("a", "y"), "s2", thingName("a", "y")), stored(thingURL, thingName("b", "x"), "s3", thingName("b", "x"))},
			0, nil, map[string]int{"a": 2, "b": 1}, 0, map[string]int64{MetricStoreLoads + "  ": 1}, nil},
		{"one invalid, two corrupt, one too old", []storage.Resource{stored(thingURL, thingName("a", "x"), "s1", thingName("a", "x")),
			stored(thingURL, thingName("b", "z"), "s3", thingName("b", "z")+"!"), old}, 2, nil,
			map[string]int{"a": 1}, 1, map[string]int64{MetricStoreLoads + "  ": 1, MetricStoreDropped + "  ": 2,
				MetricStoreDropped + " s3 test.Thing": 1}, []string{`corrupt resources dropped" count=2`, `resource dropped" type=` + thingURL}},
		{"load failed", nil, 0, errors.New("disk gone"), map[string]int{}, 0, map[string]int64{MetricStoreErrors + "  ": 1},
			[]string{`load failed; starting without it" error="disk gone"`}},
	} {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		var logs strings.Builder
		e := storeEngine(t, mp, slog.New(slog.NewTextHandler(&logs, nil)))
		for i := range tc.rs {
			if tc.rs[i].Received.IsZero() {
				tc.rs[i].Received = now
			}
		}
		lg := &storeSide{store: loadedStore{storage.Loaded{Resources: tc.rs, Corrupt: tc.corrupt}, tc.err}, maxAge: time.Hour}
		e.clock = fixedClock{now}
		got, expired := e.loadStore(lg)
		if len(got) != len(tc.want) || len(expired) != tc.expired {
			t.Errorf("%s: loadStore = %v, %d expired; want %v, %d", tc.name, got, len(expired), tc.want, tc.expired)
		}
		for a, n := range got {
			if len(n) != tc.want[a.name] {
				t.Errorf("%s: authority %s holds %v, want %d resources", tc.name, a.name, n, tc.want[a.name])
			}
		}
		if c := storeCounts(t, reader); !maps.Equal(c, tc.counts) {
			t.Errorf("%s: counted %v, want %v", tc.name, c, tc.counts)
		}
		for _, want := range tc.logs {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("%s: logs\n%s\nlack %q", tc.name, logs.String(), want)
			}
		}
		mp.Shutdown(context.Background())
	}
}

// fixedClock is a clock that stays at one time.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time { return c.now }
func (fixedClock) AfterFunc(time.Duration, func()) (stop func() bool) {
	return func() bool { return true }
}

// storeCounts is what collectMetrics reads of the store's counters.
func storeCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for key, n := range collectMetrics(t, reader, "") {
		if strings.Contains(key, "store") {
			out[key] = n
		}
	}
	return out
}

// TestStoredExpiry: a stored resource is served up to maxAge after it was
// received, and not after the ttl its server sent; a negative
// StoreMaxAge is no limit.
func TestStoredExpiry(t *testing.T) {
	received := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		expires time.Time
		now     time.Time
		maxAge  time.Duration
		want    bool // expired
	}{
		{"young", time.Time{}, received.Add(time.Hour), 2 * time.Hour, false},
		{"exactly maxAge", time.Time{}, received.Add(2 * time.Hour), 2 * time.Hour, false},
		{"too old", time.Time{}, received.Add(3 * time.Hour), 2 * time.Hour, true},
		{"before its ttl", received.Add(time.Minute), received.Add(time.Second), 2 * time.Hour, false},
		{"past its ttl", received.Add(time.Minute), received.Add(2 * time.Minute), 2 * time.Hour, true},
		{"no limit", time.Time{}, received.Add(1000 * time.Hour), storeMaxAge(-1), false},
	} {
		s := &storedResource{received: received, expires: tc.expires}
		if got := s.expired(tc.now, tc.maxAge); got != tc.want {
			t.Errorf("%s: expired = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct{ configured, want time.Duration }{
		{0, DefaultStoreMaxAge}, {time.Minute, time.Minute}, {-1, math.MaxInt64},
	} {
		if got := storeMaxAge(tc.configured); got != tc.want {
			t.Errorf("storeMaxAge(%v) = %v, want %v", tc.configured, got, tc.want)
		}
	}
}
