package rds_test

import (
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/xdsengine/xdsengine/types/rds"
)

// TestCheckServerUse checks gRFC A36's expectation of servers' routes:
// non_forwarding_action everywhere, anything else a warning naming the
// route.
func TestCheckServerUse(t *testing.T) {
	route := func(action any) *routev3.Route {
		r := &routev3.Route{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}}
		switch a := action.(type) {
		case *routev3.Route_NonForwardingAction:
			r.Action = a
		case *routev3.Route_Route:
			r.Action = a
		case *routev3.Route_Redirect:
			r.Action = a
		}
		return r
	}
	nonForwarding := &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}}
	toCluster := &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"}}}
	redirect := &routev3.Route_Redirect{Redirect: &routev3.RedirectAction{}}
	for _, c := range []struct {
		name    string
		routes  []*routev3.Route
		wantErr string
	}{
		{name: "all non-forwarding", routes: []*routev3.Route{route(nonForwarding), route(nonForwarding)}},
		{name: "no routes", routes: nil},
		{name: "a route to a cluster", routes: []*routev3.Route{route(nonForwarding), route(toCluster)},
			wantErr: "virtual_hosts[0].routes[1]: action is cluster, not non_forwarding_action: a server fails the RPCs it matches with UNAVAILABLE"},
		{name: "a redirect", routes: []*routev3.Route{route(redirect)},
			wantErr: "virtual_hosts[0].routes[0]: action is unsupported, not non_forwarding_action"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc, err := rds.FromProto(&routev3.RouteConfiguration{Name: "r", VirtualHosts: []*routev3.VirtualHost{{Domains: []string{"*"}, Routes: c.routes}}})
			if err != nil {
				t.Fatal(err)
			}
			err = rc.CheckServerUse()
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("CheckServerUse() = %v, want nil", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Errorf("CheckServerUse() = %v, want %q", err, c.wantErr)
			}
		})
	}
}
