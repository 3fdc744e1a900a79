package engine

import (
	"math"
	"math/rand/v2"
	"time"
)

// DefaultBackoff is gRPC's connection backoff (doc/connection-backoff.md),
// the default of Config.Backoff: 1 s before the first retry, growing ×1.6
// to at most 120 s, with ±20 % jitter so that clients that lost the same
// server do not return in lockstep.
func DefaultBackoff(n int) time.Duration {
	const (
		base       = time.Second
		max        = 120 * time.Second
		multiplier = 1.6
		jitter     = 0.2
	)
	d := float64(base) * math.Pow(multiplier, float64(n))
	if d > float64(max) {
		d = float64(max)
	}
	d *= 1 + jitter*(rand.Float64()*2-1)
	return time.Duration(d)
}
