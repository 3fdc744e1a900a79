package builtin_test

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/xdstest"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// TestEndpointFallbackSwitch: GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK is
// decided by the engine's switches alone, for the built-in registry as
// for any registry holding the LEDS type: with A95 off, the LEDS client
// feature is not advertised, EDS uses lb_endpoints and ignores
// leds_cluster_locality_config, and LEDS cannot be watched.
func TestEndpointFallbackSwitch(t *testing.T) {
	const collection = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpointCollection/svc/z1"
	tests := []struct {
		name     string
		switches *features.Switches // nil: from the environment
		env      string             // GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK
		wantA95  bool
	}{
		{"switches on", &features.Switches{}, "false", true},
		{"switches off", &features.Switches{DisableEndpointFallback: true}, "", false},
		{"environment off", nil, "false", false},
		{"environment unset", nil, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(features.EnvEndpointFallback, tc.env)
			srv := scriptedads.Start(t)
			e, err := engine.New(engine.Config{
				Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(srv.Addr())}, Node: bootstrap.Node{ID: "n"}},
				Registry:  builtin.Registry(),
				Switches:  tc.switches,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()

			w := watchrec.New()
			defer e.Watch(eds.TypeURL, "c1", w)()
			st := srv.WaitStream(t)
			node := st.RecvT(t).GetNode()
			if got := slices.Contains(node.GetClientFeatures(), leds.ClientFeature); got != tc.wantA95 {
				t.Errorf("client features %v: %s advertised = %v, want %v", node.GetClientFeatures(), leds.ClientFeature, got, tc.wantA95)
			}

			// A locality with both a LEDS collection and lb_endpoints.
			cla := xdstest.ClusterLoadAssignment("c1", xdstest.Locality{Zone: "z1", Collection: collection, Endpoints: []string{"10.0.0.1:80"}})
			a, err := anypb.New(cla)
			if err != nil {
				t.Fatal(err)
			}
			st.SendT(t, scriptedads.Response(eds.TypeURL, "1", a))
			ev := w.NextChanged(t)
			if ev.Err != nil {
				t.Fatalf("EDS: %v", ev.Err)
			}
			got := ev.Resource.(*eds.ClusterLoadAssignment)
			if tc.wantA95 {
				if !slices.Equal(got.LEDSCollections(), []string{collection}) || len(got.Localities[0].Endpoints) != 0 {
					t.Errorf("A95 on: localities %+v, want the LEDS collection and lb_endpoints ignored", got.Localities)
				}
			} else if len(got.LEDSCollections()) != 0 || len(got.Localities[0].Endpoints) != 1 {
				t.Errorf("A95 off: localities %+v, want lb_endpoints and no collection", got.Localities)
			}

			lw := watchrec.New()
			defer e.Watch(leds.TypeURL, collection, lw)()
			if !tc.wantA95 {
				if ev := lw.NextChanged(t); status.Code(ev.Err) != codes.FailedPrecondition || engine.KindOf(ev.Err) != engine.KindUnknownType {
					t.Fatalf("LEDS watch with A95 off: got %v, want FAILED_PRECONDITION (type switched off)", ev)
				}
			}
		})
	}
}
