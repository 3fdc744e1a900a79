package builtin_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/types/rds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTypes(t *testing.T) {
	want := []string{lds.TypeURL, rds.TypeURL, cds.TypeURL, eds.TypeURL, leds.TypeURL, leds.EndpointTypeURL}
	var got []string
	for _, rt := range builtin.Types() {
		got = append(got, rt.TypeURL)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Types() URLs = %q, want %q", got, want)
	}
	types := builtin.Types()
	types[0] = registry.ResourceType{}
	if builtin.Types()[0].TypeURL != lds.TypeURL {
		t.Error("modifying the result of Types() changed the next result")
	}
}

func TestRegistry(t *testing.T) {
	r := builtin.Registry()
	if r.Len() != 6 {
		t.Fatalf("Registry().Len() = %d, want 6", r.Len())
	}
	for _, rt := range builtin.Types() {
		got, ok := r.Lookup(rt.TypeURL)
		if !ok || got.ShortName() != rt.ShortName() {
			t.Errorf("Lookup(%q) = %v, %v; want the built-in type", rt.TypeURL, got.ShortName(), ok)
		}
	}
	if builtin.Registry() == r {
		t.Error("Registry() returned the same registry twice; want a new one per call")
	}
	// SotW semantics: LDS and CDS responses carry every resource.
	for url, want := range map[string]bool{lds.TypeURL: true, rds.TypeURL: false, cds.TypeURL: true, eds.TypeURL: false, leds.TypeURL: false} {
		if rt, _ := r.Lookup(url); rt.AllResourcesRequiredInSotW != want {
			t.Errorf("%s AllResourcesRequiredInSotW = %v, want %v", url, rt.AllResourcesRequiredInSotW, want)
		}
	}
}

func TestRegistryRejectsRedefiningABuiltin(t *testing.T) {
	_, err := builtin.Registry().With(cds.NewType(cds.Options{}))
	if !errors.Is(err, registry.ErrDuplicateType) {
		t.Errorf("With(another Cluster type) error = %v, want ErrDuplicateType", err)
	}
}

func ExampleRegistry() {
	for _, url := range builtin.Registry().TypeURLs() {
		fmt.Println(url)
	}
	// Output:
	// type.googleapis.com/envoy.config.cluster.v3.Cluster
	// type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
	// type.googleapis.com/envoy.config.endpoint.v3.LbEndpoint
	// type.googleapis.com/envoy.config.endpoint.v3.LbEndpointCollection
	// type.googleapis.com/envoy.config.listener.v3.Listener
	// type.googleapis.com/envoy.config.route.v3.RouteConfiguration
}
