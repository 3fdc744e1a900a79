package rawresource_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// resource is what every built-in resource type implements with this
// package.
type resource interface {
	registry.Equaler
	Proto() proto.Message
}

// TestBuiltinTypes: each built-in type's Equal and Proto behave alike,
// nil pointers of the type included (cds, eds and leds panicked on them).
func TestBuiltinTypes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		zero, null resource // a value without bytes, a nil pointer
		other      resource // of another type
	}{
		{"Listener", &lds.Listener{}, (*lds.Listener)(nil), &rds.RouteConfiguration{}},
		{"RouteConfiguration", &rds.RouteConfiguration{}, (*rds.RouteConfiguration)(nil), &lds.Listener{}},
		{"Cluster", &cds.Cluster{}, (*cds.Cluster)(nil), &eds.ClusterLoadAssignment{}},
		{"ClusterLoadAssignment", &eds.ClusterLoadAssignment{}, (*eds.ClusterLoadAssignment)(nil), &cds.Cluster{}},
		{"LbEndpointCollection", &leds.LbEndpointCollection{}, (*leds.LbEndpointCollection)(nil), &leds.LbEndpoint{}},
		{"LbEndpoint", &leds.LbEndpoint{}, (*leds.LbEndpoint)(nil), &leds.LbEndpointCollection{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, check := range []struct {
				what string
				got  bool
				want bool
			}{
				{"a value equals itself", tc.zero.Equal(tc.zero), true},
				{"a value equals nil of its type", tc.zero.Equal(tc.null), false},
				{"nil equals nil of its type", tc.null.Equal(tc.null), true},
				{"nil equals a value", tc.null.Equal(tc.zero), false},
				{"a value equals another type's", tc.zero.Equal(tc.other), false},
			} {
				if check.got != check.want {
					t.Errorf("%s: %v, want %v", check.what, check.got, check.want)
				}
			}
			if m := tc.zero.Proto(); m == nil || proto.Size(m) != 0 {
				t.Errorf("Proto of a value without bytes = %v, want an empty message", m)
			}
		})
	}
}
