package engine

// FallbackState is what a FallbackPolicy decides on: an authority whose
// active xDS server just became unreachable, or that got a new watch
// while it was unreachable.
type FallbackState struct {
	// Authority is the A47 authority, "" for old-style names.
	Authority string
	// Server is the unreachable server; Next is the one fallback would
	// connect to.
	Server, Next string
	// Uncached counts watched resources still waiting for their first
	// version (state REQUESTED); Cached counts those with a cached one.
	Uncached, Cached int
	// ReachabilityOnly is the authority's fallback_on_reachability_only
	// (A95; false when GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=false).
	ReachabilityOnly bool
}

// FallbackPolicy decides whether an authority moves on to its next server.
// It is called with the engine's lock held: it must be quick and must not
// call the engine.
type FallbackPolicy interface {
	ShouldFallback(s FallbackState) bool
}

// FallbackPolicyFunc adapts a function to a FallbackPolicy.
type FallbackPolicyFunc func(s FallbackState) bool

// ShouldFallback calls f.
func (f FallbackPolicyFunc) ShouldFallback(s FallbackState) bool { return f(s) }

// DefaultFallbackPolicy is gRPC's: fall back when a watched resource is
// still uncached (A71), or on unreachability alone when the authority sets
// fallback_on_reachability_only (A95).
func DefaultFallbackPolicy() FallbackPolicy {
	return FallbackPolicyFunc(func(s FallbackState) bool { return s.Uncached > 0 || s.ReachabilityOnly })
}
