package engine_test

import (
	"fmt"

	"github.com/xdsengine/xdsengine/engine"
)

// ExampleDefaultFallbackPolicy builds a policy on top of gRPC's: one
// authority, whose configuration must come from its primary server only,
// never falls back; every other authority does as gRPC does, falling back
// while a watched resource has no version yet (gRFC A71), or whenever the
// primary is unreachable if the authority asks for that (gRFC A95).
func ExampleDefaultFallbackPolicy() {
	def := engine.DefaultFallbackPolicy()
	policy := engine.FallbackPolicyFunc(func(s engine.FallbackState) bool {
		if s.Authority == "payments.example" {
			return false
		}
		return def.ShouldFallback(s)
	})
	// Set it with engine.Config{FallbackPolicy: policy, ...}.

	for _, s := range []engine.FallbackState{
		{Authority: "", Uncached: 1, Cached: 3},
		{Authority: "", Uncached: 0, Cached: 4},
		{Authority: "mesh.example", Uncached: 0, Cached: 4, ReachabilityOnly: true},
		{Authority: "payments.example", Uncached: 2, Cached: 0},
	} {
		fmt.Printf("authority %q, %d uncached, reachability only %v: default %v, policy %v\n",
			s.Authority, s.Uncached, s.ReachabilityOnly, def.ShouldFallback(s), policy.ShouldFallback(s))
	}
	// Output:
	// authority "", 1 uncached, reachability only false: default true, policy true
	// authority "", 0 uncached, reachability only false: default false, policy false
	// authority "mesh.example", 0 uncached, reachability only true: default true, policy true
	// authority "payments.example", 2 uncached, reachability only false: default true, policy false
}
