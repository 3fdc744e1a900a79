package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
)

func decodeNothing(raw []byte, _ registry.DecodeOptions) (registry.DecodeResult, error) {
	return registry.DecodeResult{}, nil
}

// resourceType is a type that is on unless the switches turn endpoint
// fallback off, when offUnderA95.
func resourceType(name string, offUnderA95 bool, clientFeatures ...string) registry.ResourceType {
	t := registry.ResourceType{TypeURL: "type.googleapis.com/test." + name, Name: name,
		Decoder: registry.DecoderFunc(decodeNothing), ClientFeatures: clientFeatures}
	if offUnderA95 {
		t.Enabled = func(sw features.Switches) bool { return !sw.DisableEndpointFallback }
	}
	return t
}

func TestCheckConfig(t *testing.T) {
	reg := registry.MustNew(resourceType("A", false))
	good := &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{URI: "s"}},
		Authorities: map[string]bootstrap.Authority{"a": {Servers: []bootstrap.ServerConfig{{URI: "t"}}}, "b": {}}}
	for _, tc := range []struct {
		name     string
		reg      *registry.Registry
		bs       *bootstrap.Bootstrap
		maxBytes int
		err      string // "" for none
	}{
		{"good", reg, good, 0, ""},
		{"no registry", nil, good, 0, "Config.Registry must hold at least one resource type"},
		{"empty registry", registry.MustNew(), good, 0, "Config.Registry must hold at least one resource type"},
		{"no bootstrap", reg, nil, 0, "Config.Bootstrap is required"},
		{"no server", reg, &bootstrap.Bootstrap{}, 0, "Config.Bootstrap.Servers must list at least one xDS server"},
		{"a server without URI", reg, &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{URI: "s"}, {}}}, 0,
			"Config.Bootstrap.Servers[1]: empty URI"},
		{"negative MaxResponseBytes", reg, good, -1, "Config.MaxResponseBytes: -1 is negative"},
		{"an authority's server without URI", reg, &bootstrap.Bootstrap{Servers: good.Servers,
			Authorities: map[string]bootstrap.Authority{"a": {Servers: []bootstrap.ServerConfig{{}}}}}, 0,
			`Config.Bootstrap.Authorities["a"].Servers[0]: empty URI`},
	} {
		err := checkConfig(tc.reg, tc.bs, tc.maxBytes)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.HasSuffix(err.Error(), tc.err)) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestEnabledTypes(t *testing.T) {
	reg := registry.MustNew(resourceType("A", false, "a1"), resourceType("B", true, "b1", "b2"), resourceType("C", false))
	for _, tc := range []struct {
		name     string
		sw       features.Switches
		types    []string // names, in the registry's order
		features []string
	}{
		{"all on", features.Switches{}, []string{"A", "B", "C"}, []string{"a1", "b1", "b2"}},
		{"B off", features.Switches{DisableEndpointFallback: true}, []string{"A", "C"}, []string{"a1"}},
	} {
		types, clientFeatures := enabledTypes(reg, tc.sw)
		var names []string
		for _, u := range reg.TypeURLs() {
			if typ := types[u]; typ != nil {
				if typ.TypeURL != u {
					t.Errorf("%s: types[%q] is %q", tc.name, u, typ.TypeURL)
				}
				names = append(names, typ.Name)
			}
		}
		if _, ok := types.lookup("type.googleapis.com/test.Unregistered"); ok {
			t.Errorf("%s: an unregistered type looked up", tc.name)
		}
		if typ, ok := types.lookup(reg.TypeURLs()[0]); !ok || typ.Name != "A" {
			t.Errorf("%s: Lookup of A = %v, %v", tc.name, typ, ok)
		}
		if len(types) != len(names) || !slices.Equal(names, tc.types) || !slices.Equal(clientFeatures, tc.features) {
			t.Errorf("%s: types %v (%d), client features %v; want %v, %v", tc.name, names, len(types), clientFeatures,
				tc.types, tc.features)
		}
	}
}

// own is a user's feature.
type own string

func (o own) Name() string { return string(o) }

func TestKnownFeaturesAndServerInfo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sw      features.Switches
		own     []features.ServerFeature
		server  bootstrap.ServerConfig
		active  []string
		delta   bool
		ignored []string
		// The feature fail_on_data_errors resolves to is the built-in one
		// (an ErrorPolicy), not an inert name.
		failOnDataErrorsActs bool
	}{
		{name: "A88", server: bootstrap.ServerConfig{URI: "s", ServerFeatures: []string{"fail_on_data_errors", "typo", "delta_xds"}},
			active: []string{"fail_on_data_errors", "delta_xds"}, delta: true, ignored: []string{"typo"}, failOnDataErrorsActs: true},
		{name: "before A88", sw: features.Switches{DisableDataErrorHandling: true},
			server: bootstrap.ServerConfig{URI: "s", ServerFeatures: []string{"fail_on_data_errors"}},
			active: []string{"fail_on_data_errors"}},
		{name: "delta from the server entry", server: bootstrap.ServerConfig{URI: "s", Delta: true}, delta: true},
		{name: "a user's feature, overriding a built-in", own: []features.ServerFeature{own("mine"), own("fail_on_data_errors")},
			server: bootstrap.ServerConfig{URI: "s", ServerFeatures: []string{"mine", "fail_on_data_errors", "ignore_resource_deletion"}},
			active: []string{"mine", "fail_on_data_errors", "ignore_resource_deletion"}},
	} {
		info, ignored := serverInfo(tc.server, knownFeatures(tc.sw, tc.own))
		acts := info.Features.ErrorAction(features.ErrorEvent{Class: features.DataError}, features.Keep) == features.Drop
		if info.URI != tc.server.URI || !slices.Equal(info.Features.Names(), tc.active) || info.Delta != tc.delta ||
			!slices.Equal(ignored, tc.ignored) || acts != tc.failOnDataErrorsActs {
			t.Errorf("%s: Server = %+v (names %v, fail_on_data_errors acts: %v), ignored %v; want names %v, delta %v, acts %v, ignored %v",
				tc.name, info, info.Features.Names(), acts, ignored, tc.active, tc.delta, tc.failOnDataErrorsActs, tc.ignored)
		}
	}
}

func TestAuthoritiesOf(t *testing.T) {
	s1, s2, s3 := bootstrap.ServerConfig{URI: "s1"}, bootstrap.ServerConfig{URI: "s2"}, bootstrap.ServerConfig{URI: "s3"}
	bs := &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{s1, s2}, Authorities: map[string]bootstrap.Authority{
		"own":     {Servers: []bootstrap.ServerConfig{s3, s1}, FallbackOnReachabilityOnly: true},
		"default": {}, // the top-level servers
	}}
	uris := func(a authoritySetup) string {
		var out []string
		for _, s := range a.Servers {
			out = append(out, s.URI)
		}
		return a.Name + ":" + strings.Join(out, ",") + map[bool]string{true: " reachability only"}[a.ReachabilityOnly]
	}
	for _, tc := range []struct {
		name string
		sw   features.Switches
		want []string // the old-style authority's, then the others' by name
	}{
		{"as the bootstrap says", features.Switches{}, []string{":s1,s2", "default:s1,s2", "own:s3,s1 reachability only"}},
		{"fallback off", features.Switches{DisableFallback: true}, []string{":s1", "default:s1", "own:s3 reachability only"}},
		{"endpoint fallback off", features.Switches{DisableEndpointFallback: true}, []string{":s1,s2", "default:s1,s2", "own:s3,s1"}},
	} {
		byName := map[string]authoritySetup{}
		old := authoritiesOf(bs, tc.sw, func(a authoritySetup) { byName[a.Name] = a })
		got := []string{uris(old)}
		for _, name := range []string{"default", "own"} {
			got = append(got, uris(byName[name]))
		}
		if len(byName) != 2 || !slices.Equal(got, tc.want) {
			t.Errorf("%s: Authorities = %v (%d by name), want %v", tc.name, got, len(byName), tc.want)
		}
	}
}

// TestSwitchesOf: configured switches win over the environment's.
func TestSwitchesOf(t *testing.T) {
	t.Setenv("GRPC_EXPERIMENTAL_XDS_FALLBACK", "false")
	for _, tc := range []struct {
		name       string
		configured *features.Switches
		want       features.Switches
	}{
		{"from the environment", nil, features.SwitchesFromEnv()},
		{"configured", &features.Switches{}, features.Switches{}},
	} {
		if got := switchesOf(tc.configured); got != tc.want {
			t.Errorf("%s: Switches = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if !switchesOf(nil).DisableFallback {
		t.Error("GRPC_EXPERIMENTAL_XDS_FALLBACK=false is not read")
	}
}

// TestCertificateProvidersOf: instances of the bootstrap pass, others do
// not, a later change of the bootstrap is not seen, and ignore means no
// test.
func TestCertificateProvidersOf(t *testing.T) {
	bs := &bootstrap.Bootstrap{CertificateProviders: map[string]bootstrap.CertificateProvider{"mesh": {}}}
	known := certificateProvidersOf(bs, false)
	bs.CertificateProviders["later"] = bootstrap.CertificateProvider{}
	for _, tc := range []struct {
		name string
		want bool
	}{{"mesh", true}, {"other", false}, {"later", false}} {
		if got := known(tc.name); got != tc.want {
			t.Errorf("instance %q known = %v, want %v", tc.name, got, tc.want)
		}
	}
	if certificateProvidersOf(bs, true) != nil {
		t.Error("with ignore set, a test was returned")
	}
}

// TestServerTimer: 15 s by default, 30 s and transient with
// resource_timer_is_transient_error, a positive override's length either
// way.
func TestServerTimer(t *testing.T) {
	transient := features.Resolve([]string{features.NameResourceTimerIsTransientError}, features.Builtin()...)
	for _, tc := range []struct {
		name     string
		fs       features.Set
		override time.Duration
		want     features.Timer
	}{
		{"default", nil, 0, features.Timer{Timeout: 15 * time.Second}},
		{"transient", transient, 0, features.Timer{Timeout: 30 * time.Second, Transient: true}},
		{"overridden", nil, time.Second, features.Timer{Timeout: time.Second}},
		{"transient, overridden", transient, time.Second, features.Timer{Timeout: time.Second, Transient: true}},
		{"negative override ignored", nil, -time.Second, features.Timer{Timeout: 15 * time.Second}},
	} {
		if got := serverTimer(tc.fs, tc.override); got != tc.want {
			t.Errorf("%s: Timer = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDefaultBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		base time.Duration // before jitter
	}{
		{0, time.Second},
		{1, 1600 * time.Millisecond},
		{5, time.Duration(10.48576 * float64(time.Second))},
		{10, 109951162777 * time.Nanosecond},
		{11, 120 * time.Second}, // capped
		{100, 120 * time.Second},
	} {
		lo, hi := time.Duration(0.8*float64(tc.base))-time.Microsecond, time.Duration(1.2*float64(tc.base))+time.Microsecond
		var below, above bool // jitter goes both ways
		for range 200 {
			d := defaultBackoff(tc.n)
			if d < lo || d > hi {
				t.Fatalf("defaultBackoff(%d) = %v, want within [%v, %v]", tc.n, d, lo, hi)
			}
			below, above = below || d < tc.base, above || d > tc.base
		}
		if !below || !above {
			t.Errorf("defaultBackoff(%d): 200 draws all on one side of %v", tc.n, tc.base)
		}
	}
}

func TestBuildNode(t *testing.T) {
	meta, err := structpb.NewStruct(map[string]any{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	base := []string{clientFeatureNoOverprovisioning, clientFeatureResourceInSotW}
	for _, tc := range []struct {
		name     string
		n        bootstrap.Node
		features []string
		want     *corepb.Node
	}{
		{"bare", bootstrap.Node{ID: "id"}, nil, &corepb.Node{Id: "id", UserAgentName: "ua",
			UserAgentVersionType: &corepb.Node_UserAgentVersion{UserAgentVersion: "v1"}, ClientFeatures: base}},
		{"full, features without repeats", bootstrap.Node{ID: "id", Cluster: "c", Metadata: meta,
			Locality: bootstrap.Locality{Region: "r", Zone: "z", SubZone: "s"}},
			[]string{"f1", clientFeatureResourceInSotW, "f2", "f1"},
			&corepb.Node{Id: "id", Cluster: "c", Metadata: meta, UserAgentName: "ua",
				UserAgentVersionType: &corepb.Node_UserAgentVersion{UserAgentVersion: "v1"},
				Locality:             &corepb.Locality{Region: "r", Zone: "z", SubZone: "s"},
				ClientFeatures:       append(base, "f1", "f2")}},
	} {
		if diff := cmp.Diff(tc.want, buildNode(tc.n, "ua", "v1", tc.features), protocmp.Transform()); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tc.name, diff)
		}
	}
}
