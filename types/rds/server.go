package rds

import (
	"fmt"

	"github.com/xdsengine/xdsengine/registry"
)

// CheckServerUse reports the routes a gRPC server cannot serve RPCs with.
// gRFC A36 expects non_forwarding_action on every route a server uses
// (and a route action on every route a client uses); a server fails the
// RPCs that match a route with any other action with UNAVAILABLE, after
// the HTTP filters ran. Such a route configuration is still valid, since
// RDS cannot know who uses it, so the report is a warning to log, what
// A36 calls configuration error logging. It is nil when every route is a
// non_forwarding_action, and otherwise names each other route in the
// one-line format of validation errors.
func (rc *RouteConfiguration) CheckServerUse() error {
	var errs registry.FieldErrors
	for i := range rc.VirtualHosts {
		for _, r := range rc.VirtualHosts[i].Routes {
			if r.Action.Kind != ActionNonForwarding {
				errs.Add(fmt.Sprintf("virtual_hosts[%d].routes[%d]", i, r.index),
					fmt.Sprintf("action is %s, not non_forwarding_action: a server fails the RPCs it matches with UNAVAILABLE", r.Action.Kind))
			}
		}
	}
	return errs.Err()
}
