package rds_test

import (
	"fmt"
	"log"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/rds"
)

// ExampleFromProto uses a route table that did not come from an xDS
// server: here a program's static configuration, in the proto's JSON
// form. FromProto converts it without judging it, as the decoder does, so
// the validator runs next, with the rules the engine applies to a
// RouteConfiguration a server sends; a valid table is then used as one
// from a server would be.
func ExampleFromProto() {
	for _, config := range []string{
		`{"name": "static-routes", "virtual_hosts": [{
			"name": "payments", "domains": ["payments.example.com", "pay*.example.com"],
			"routes": [{"match": {"prefix": "/"}, "route": {"cluster": "payments-v2"}}]}]}`,
		`{"name": "static-routes", "virtual_hosts": [{
			"name": "payments", "domains": ["payments.example.com", "*.payments.example.com"],
			"routes": [{"match": {"prefix": "/"}, "route": {"cluster": "payments-v2"}}]}]}`,
	} {
		var m routev3.RouteConfiguration
		if err := protojson.Unmarshal([]byte(config), &m); err != nil {
			log.Fatal(err)
		}
		rc, err := rds.FromProto(&m)
		if err != nil {
			log.Fatal(err) // only a message that cannot be serialized, or a bad embedded Any
		}
		if err := rds.Type.Validator.Validate(rc, registry.DecodeOptions{}); err != nil {
			fmt.Println("rejected:", err)
			continue
		}
		vh := rc.FindVirtualHost("eu.payments.example.com")
		fmt.Println(rc.Name, "| eu.payments.example.com ->", vh.Name, "->", vh.Routes[0].Action.Cluster)
		fmt.Println("depends on", rds.Type.Refs(rc))
	}
	// Output:
	// rejected: virtual_hosts[0].domains[1]: invalid domain pattern "pay*.example.com": want an exact host, "*", or one "*" at the start or end
	// static-routes | eu.payments.example.com -> payments -> payments-v2
	// depends on [type.googleapis.com/envoy.config.cluster.v3.Cluster/payments-v2]
}
