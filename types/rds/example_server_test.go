//lint:file-ignore SA1019 the deprecated header matchers are still sent, so the example builds one

package rds_test

import (
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/xdsengine/xdsengine/types/rds"
)

// A server expects non_forwarding_action on every route (gRFC A36);
// CheckServerUse names the others, for a warning to log.
func ExampleRouteConfiguration_CheckServerUse() {
	prefix := &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}
	rc, err := rds.FromProto(&routev3.RouteConfiguration{Name: "inbound", VirtualHosts: []*routev3.VirtualHost{{
		Domains: []string{"*"},
		Routes: []*routev3.Route{
			{Match: prefix, Action: &routev3.Route_NonForwardingAction{}},
			{Match: prefix, Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "backend"}}}},
		},
	}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(rc.CheckServerUse())
	// Output:
	// virtual_hosts[0].routes[1]: action is cluster, not non_forwarding_action: a server fails the RPCs it matches with UNAVAILABLE
}

// HeaderMatcherFromProto converts a header matcher outside a route, such
// as an RBAC policy's.
func ExampleHeaderMatcherFromProto() {
	m := rds.HeaderMatcherFromProto(&routev3.HeaderMatcher{Name: "X-User", HeaderMatchSpecifier: &routev3.HeaderMatcher_PrefixMatch{PrefixMatch: "admin-"}})
	fmt.Println(m.Name, m.Kind, m.Value)
	// Output:
	// x-user prefix admin-
}
