package eds_test

import (
	"strings"
	"testing"

	xdscorepb "github.com/cncf/xds/go/xds/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/leds"
)

func collection(t *testing.T, name string, lbs ...*endpointpb.LbEndpoint) *leds.LbEndpointCollection {
	t.Helper()
	var coll endpointpb.LbEndpointCollection
	for _, lb := range lbs {
		a, err := anypb.New(lb)
		if err != nil {
			t.Fatal(err)
		}
		coll.Entries = append(coll.Entries, &xdscorepb.CollectionEntry{ResourceSpecifier: &xdscorepb.CollectionEntry_InlineEntry_{
			InlineEntry: &xdscorepb.CollectionEntry_InlineEntry{Resource: a},
		}})
	}
	res, err := leds.Type.Decode(marshal(t, &coll), registry.DecodeOptions{WrapperName: name})
	if err != nil {
		t.Fatalf("decoding collection %q: %v", name, err)
	}
	return res.Resource.(*leds.LbEndpointCollection)
}

// lookupOf resolves refs from a fixed set of resources.
func lookupOf(resources map[registry.Ref]registry.Resource) func(registry.Ref) (registry.Resource, bool) {
	return func(ref registry.Ref) (registry.Resource, bool) {
		r, ok := resources[ref]
		return r, ok
	}
}

func ledsRef(name string) registry.Ref { return registry.Ref{TypeURL: leds.TypeURL, Name: name} }

func composeInput() *endpointpb.ClusterLoadAssignment {
	return cla(
		locality("inline", 0, 1, lbEndpoint("10.0.0.1", 80)),
		ledsLocality("a", 0, ledsA),
		ledsLocality("b", 1, ledsB),
	)
}

func TestComposeMergesCollections(t *testing.T) {
	decoded := decode(t, composeInput())
	collA := collection(t, ledsA, lbEndpoint("10.0.1.1", 80), lbEndpoint("10.0.1.2", 80))
	collB := collection(t, ledsB) // empty: locality b is unreachable, which is valid
	lookup := lookupOf(map[registry.Ref]registry.Resource{ledsRef(ledsA): collA, ledsRef(ledsB): collB})

	r, err := decoded.Compose(lookup)
	if err != nil {
		t.Fatalf("Compose() error = %v", err)
	}
	got := r.(*eds.ClusterLoadAssignment)
	want := view{ClusterName: clusterName, Localities: []eds.Locality{
		{ID: zoneID("inline"), Weight: 1, Endpoints: []eds.Endpoint{ep("10.0.0.1:80")}},
		{ID: zoneID("a"), Weight: 1, LEDSCollection: ledsA, Endpoints: []eds.Endpoint{ep("10.0.1.1:80"), ep("10.0.1.2:80")}},
		{ID: zoneID("b"), Priority: 1, Weight: 1, LEDSCollection: ledsB},
	}}
	if diff := cmp.Diff(want, viewOf(got), cmpOpts); diff != "" {
		t.Errorf("Compose() mismatch (-want +got):\n%s", diff)
	}
	if !got.Composed() {
		t.Error("Composed() = false for a composed resource")
	}
	if decoded.Localities[1].Endpoints != nil {
		t.Error("Compose modified its receiver")
	}
	if decoded.Equal(got) || got.Equal(decoded) {
		t.Error("a composed value Equals the decoded one")
	}
	again, err := decode(t, composeInput()).Compose(lookup)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(again) {
		t.Error("composing equal inputs gives values that are not Equal")
	}
	changed, err := decoded.Compose(lookupOf(map[registry.Ref]registry.Resource{
		ledsRef(ledsA): collection(t, ledsA, lbEndpoint("10.0.1.3", 80)), ledsRef(ledsB): collB,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Equal(changed) {
		t.Error("values composed from different collections are Equal")
	}
	if refs := eds.Type.Refs(got); len(refs) != 2 {
		t.Errorf("Refs(composed) = %v, want the two collections", refs)
	}
}

func TestComposeErrors(t *testing.T) {
	collA := collection(t, ledsA, lbEndpoint("10.0.1.1", 80))
	collB := collection(t, ledsB)
	tests := []struct {
		name      string
		resources map[registry.Ref]registry.Resource
		wantErr   string
	}{
		{
			name:      "missing collection",
			resources: map[registry.Ref]registry.Resource{ledsRef(ledsA): collA},
			wantErr:   `LEDS collection "` + ledsB + `" is not available`,
		},
		{
			name:      "wrong type",
			resources: map[registry.Ref]registry.Resource{ledsRef(ledsA): collA, ledsRef(ledsB): "not a collection"},
			wantErr:   `LEDS collection "` + ledsB + `" resolved to string, want *leds.LbEndpointCollection`,
		},
		{
			name: "address duplicated by a collection",
			resources: map[registry.Ref]registry.Resource{
				ledsRef(ledsA): collection(t, ledsA, lbEndpoint("10.0.0.1", 80)), ledsRef(ledsB): collB,
			},
			wantErr: `duplicate endpoint address 10.0.0.1:80 from LEDS collection "` + ledsA + `"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := decode(t, composeInput()).Compose(lookupOf(tc.resources))
			if err == nil {
				t.Fatalf("Compose() = %v, want error containing %q", r, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), clusterName) {
				t.Errorf("Compose() error = %q, want it to name %q and contain %q", err, clusterName, tc.wantErr)
			}
		})
	}
}

// globMember decodes one LbEndpoint member of a glob collection.
func globMember(t *testing.T, name string, lb *endpointpb.LbEndpoint) registry.GlobMember {
	t.Helper()
	res, err := leds.EndpointType.Decode(marshal(t, lb), registry.DecodeOptions{WrapperName: name})
	if err != nil {
		t.Fatalf("decoding member %q: %v", name, err)
	}
	return registry.GlobMember{Name: name, Resource: res.Resource}
}

// TestComposeGlobCollection: a locality whose leds_collection_name is a
// glob collection (xRFC TP1) depends on it as LbEndpoint resources, and
// takes its members' endpoints, in member-name order.
func TestComposeGlobCollection(t *testing.T) {
	const glob = "xdstp://xdstest.example/envoy.config.endpoint.v3.LbEndpoint/backend/z/*"
	res, err := eds.Type.Decode(marshal(t, cla(ledsLocality("z", 0, glob))), registry.DecodeOptions{Server: registry.ServerInfo{Delta: true}})
	if err != nil {
		t.Fatalf("Decode() from an incremental server: %v", err)
	}
	decoded := res.Resource.(*eds.ClusterLoadAssignment)
	ref := registry.Ref{TypeURL: leds.EndpointTypeURL, Name: glob}
	if refs := eds.Type.Refs(decoded); !cmp.Equal(refs, []registry.Ref{ref}) {
		t.Fatalf("Refs = %v, want %v", refs, ref)
	}
	coll := &registry.GlobCollection{Name: glob, Members: []registry.GlobMember{
		globMember(t, strings.TrimSuffix(glob, "*")+"m1", lbEndpoint("10.0.9.1", 80)),
		globMember(t, strings.TrimSuffix(glob, "*")+"m2", lbEndpoint("10.0.9.2", 80)),
	}}
	r, err := decoded.Compose(lookupOf(map[registry.Ref]registry.Resource{ref: coll}))
	if err != nil {
		t.Fatalf("Compose() error = %v", err)
	}
	got := r.(*eds.ClusterLoadAssignment)
	var addrs []string
	for _, e := range got.Localities[0].Endpoints {
		addrs = append(addrs, e.Address.String())
	}
	if !cmp.Equal(addrs, []string{"10.0.9.1:80", "10.0.9.2:80"}) {
		t.Fatalf("endpoints %v, want the members'", addrs)
	}
	fewer := &registry.GlobCollection{Name: glob, Members: coll.Members[:1]}
	r2, err := decoded.Compose(lookupOf(map[registry.Ref]registry.Resource{ref: fewer}))
	if err != nil {
		t.Fatal(err)
	}
	if got.Equal(r2) {
		t.Error("values composed from different member sets are Equal")
	}
	wrong := &registry.GlobCollection{Name: glob, Members: []registry.GlobMember{{Name: "x", Resource: collection(t, "x")}}}
	if _, err := decoded.Compose(lookupOf(map[registry.Ref]registry.Resource{ref: wrong})); err == nil || !strings.Contains(err.Error(), "want *leds.LbEndpoint") {
		t.Fatalf("Compose with a member of another type: %v, want an error naming it", err)
	}
}
