package cds_test

import (
	"fmt"

	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
)

// StringMatcherFromProto converts a StringMatcher outside a Cluster, such
// as an RBAC policy's, with the rules a Cluster's SAN matchers follow;
// each broken rule goes to report, here a FieldErrors.
func ExampleStringMatcherFromProto() {
	var errs registry.FieldErrors
	sm, ok := cds.StringMatcherFromProto(&matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Prefix{Prefix: "spiffe://"}}, "principal", errs.Add)
	fmt.Println(sm.Kind == cds.MatchPrefix, sm.Pattern, ok)
	_, ok = cds.StringMatcherFromProto(&matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Suffix{}}, "principal", errs.Add)
	fmt.Println(ok, errs.Err())
	// Output:
	// true spiffe:// true
	// false principal: empty prefix, suffix or contains is not allowed
}
