package keep

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
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

const thingURL = "type.test/Thing"

// thing decodes "name" or "name:server" (the URI the decoder was given
// must be server) and rejects a name ending in "!", as a registry's
// type would.
var thing = registry.ResourceType{TypeURL: thingURL, Name: "Thing",
	Decoder: registry.DecoderFunc(func(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
		name, server, hasServer := strings.Cut(string(raw), ":")
		if strings.HasSuffix(name, "!") {
			return registry.DecodeResult{Name: name}, errors.New("invalid")
		}
		if hasServer && server != opts.Server.URI {
			return registry.DecodeResult{Name: name}, errors.New("decoded for server " + opts.Server.URI)
		}
		return registry.DecodeResult{Name: name, Resource: name}, nil
	})}

var notStored = registry.ResourceType{TypeURL: "type.test/Secret", Name: "Secret", NotStored: true,
	Decoder: thing.Decoder}

// decoder has authorities "a" (servers s1, s2) and "b" (server s3):
// names are "authority/key".
func decoder() *Decoder[string] {
	servers := map[string][]bootstrap.ServerConfig{"a": {{URI: "s1"}, {URI: "s2"}}, "b": {{URI: "s3"}}}
	return &Decoder[string]{
		Types: map[string]*registry.ResourceType{thingURL: &thing, notStored.TypeURL: &notStored},
		Resolve: func(_, name string) (string, []bootstrap.ServerConfig, string, error) {
			auth, key, ok := strings.Cut(name, "/")
			if !ok || servers[auth] == nil {
				return "", nil, "", errors.New("unknown authority")
			}
			return auth, servers[auth], key, nil
		},
		Known: features.Builtin(),
	}
}

func stored(typeURL, name, server, raw string) Change {
	return Change{Key: Key{TypeURL: typeURL, Name: name}, Server: server, Version: "v1", Raw: []byte(raw)}
}

// TestDecode: a resource is served only when its type is stored, its
// name resolves, its server is its authority's and its bytes validate as
// the resource of its name, decoded for that server.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       Change
		wantAuth string
		wantKey  string
		wantErr  string
	}{
		{"valid", stored(thingURL, "a/x", "s2", "a/x:s2"), "a", "x", ""},
		{"unknown type", stored("type.test/Gone", "a/x", "s1", "a/x"), "", "", "not registered"},
		{"type not stored", stored(notStored.TypeURL, "a/x", "s1", "a/x"), "", "", "not stored"},
		{"name does not resolve", stored(thingURL, "c/x", "s1", "c/x"), "", "", "unknown authority"},
		{"server not the authority's", stored(thingURL, "b/x", "s1", "b/x"), "", "", "server s1 is not one of"},
		{"invalid bytes", stored(thingURL, "a/x!", "s1", "a/x!"), "", "", "invalid"},
		{"bytes of another resource", stored(thingURL, "a/x", "s1", "a/y"), "", "", `the bytes are of resource "a/y"`},
	} {
		a, name, s, err := decoder().Decode(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || s != nil {
				t.Errorf("%s: Decode = %v, %v; want an error with %q", tc.name, s, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: Decode: %v", tc.name, err)
		}
		if a != tc.wantAuth || name != (Name{thingURL, tc.wantKey}) || s.Value != tc.in.Name || s.Server.URI != tc.in.Server ||
			s.Version != "v1" || string(s.Raw) != string(tc.in.Raw) {
			t.Errorf("%s: Decode = %q, %v, %+v", tc.name, a, name, s)
		}
	}
}

// counts collects the counters' values by name, server and type.
func counts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range sum.DataPoints {
					server, _ := p.Attributes.Value(metrics.LabelServer)
					typ, _ := p.Attributes.Value(metrics.LabelResourceType)
					out[m.Name+" "+server.AsString()+" "+typ.AsString()] += p.Value
				}
			}
		}
	}
	return out
}

// TestLoad: resources are indexed by authority, then type and key; a
// failed load, corrupt resources and each resource dropped are counted
// and logged.
func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rs      []Change
		corrupt int
		err     error
		want    map[string]int // authority: resources
		counts  map[string]int64
		logs    []string
	}{
		{"all valid", []Change{stored(thingURL, "a/x", "s1", "a/x"), stored(thingURL, "a/y", "s2", "a/y"),
			stored(thingURL, "b/x", "s3", "b/x")}, 0, nil,
			map[string]int{"a": 2, "b": 1}, map[string]int64{metrics.StoreLoads + "  ": 1}, nil},
		{"one invalid, two corrupt", []Change{stored(thingURL, "a/x", "s1", "a/x"), stored(thingURL, "b/z!", "s3", "b/z!")}, 2, nil,
			map[string]int{"a": 1}, map[string]int64{metrics.StoreLoads + "  ": 1, metrics.StoreDropped + "  ": 2,
				metrics.StoreDropped + " s3 Thing": 1}, []string{`corrupt resources dropped" count=2`, `resource dropped" type=type.test/Thing name=b/z! error=invalid`}},
		{"load failed", nil, 0, errors.New("disk gone"), nil, map[string]int64{metrics.StoreErrors + "  ": 1},
			[]string{`load failed; starting without it" error="disk gone"`}},
	} {
		reader := sdkmetric.NewManualReader()
		rec, err := metrics.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), "", "", func() (metrics.Gauges, bool) { return metrics.Gauges{}, false })
		if err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		d := decoder()
		d.Metrics, d.Log = rec, slog.New(slog.NewTextHandler(&logs, nil))
		got := d.Load(tc.rs, tc.corrupt, tc.err)
		if len(got) != len(tc.want) {
			t.Errorf("%s: Load = %v, want %v", tc.name, got, tc.want)
		}
		for a, n := range tc.want {
			if len(got[a]) != n {
				t.Errorf("%s: authority %s holds %v, want %d resources", tc.name, a, got[a], n)
			}
		}
		if c := counts(t, reader); !maps.Equal(c, tc.counts) {
			t.Errorf("%s: counted %v, want %v", tc.name, c, tc.counts)
		}
		for _, want := range tc.logs {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("%s: logs\n%s\nlack %q", tc.name, logs.String(), want)
			}
		}
		rec.Close()
	}
}

// TestServable: a stored resource is served up to maxAge after it was
// received, and not after the ttl its server sent.
func TestServable(t *testing.T) {
	received := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		expires time.Time
		now     time.Time
		maxAge  time.Duration
		want    bool
	}{
		{"young", time.Time{}, received.Add(time.Hour), 2 * time.Hour, true},
		{"exactly maxAge", time.Time{}, received.Add(2 * time.Hour), 2 * time.Hour, true},
		{"too old", time.Time{}, received.Add(3 * time.Hour), 2 * time.Hour, false},
		{"before its ttl", received.Add(time.Minute), received.Add(time.Second), 2 * time.Hour, true},
		{"past its ttl", received.Add(time.Minute), received.Add(2 * time.Minute), 2 * time.Hour, false},
		{"no limit", time.Time{}, received.Add(1000 * time.Hour), MaxAge(-1, time.Hour), true},
	} {
		s := &Stored{Received: received, Expires: tc.expires}
		if got := s.Servable(tc.now, tc.maxAge); got != tc.want {
			t.Errorf("%s: Servable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMaxAge: zero is the default, negative no limit.
func TestMaxAge(t *testing.T) {
	for _, tc := range []struct{ configured, want time.Duration }{
		{0, time.Hour}, {time.Minute, time.Minute}, {-1, math.MaxInt64},
	} {
		if got := MaxAge(tc.configured, time.Hour); got != tc.want {
			t.Errorf("MaxAge(%v, 1h) = %v, want %v", tc.configured, got, tc.want)
		}
	}
}
