package engine

import "github.com/xdsengine/xdsengine/engine/internal/metrics"

// Metric and label names of gRFC A78, with A88's cache states.
const (
	MetricResourceUpdatesValid   = metrics.ResourceUpdatesValid
	MetricResourceUpdatesInvalid = metrics.ResourceUpdatesInvalid
	MetricServerFailure          = metrics.ServerFailure
	MetricConnected              = metrics.Connected
	MetricResources              = metrics.Resources

	// Metrics of this engine's own, beyond A78: failures that gRPC's
	// client leaves to its logs.
	MetricResponsesTooLarge   = metrics.ResponsesTooLarge
	MetricResponsesUnreadable = metrics.ResponsesUnreadable
	MetricSlowWatchers        = metrics.SlowWatchers

	LabelTarget       = metrics.LabelTarget
	LabelServer       = metrics.LabelServer
	LabelAuthority    = metrics.LabelAuthority
	LabelResourceType = metrics.LabelResourceType
	LabelCacheState   = metrics.LabelCacheState
)

// gauges reads what the gauges report from the engine's state: which
// servers are connected, and the watched resources by authority, type and
// cache state.
func (e *Engine) gauges() (metrics.Gauges, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return metrics.Gauges{}, false
	}
	g := metrics.Gauges{Connected: map[string]bool{}, Resources: map[metrics.ResourceKey]int64{}}
	for _, c := range e.channels {
		g.Connected[c.server.URI] = g.Connected[c.server.URI] || c.connected
	}
	for _, a := range e.allAuthoritiesLocked() {
		for _, byName := range a.resources {
			for _, en := range byName {
				if !en.orphaned {
					g.Resources[metrics.ResourceKey{Authority: a.displayName(), Type: metrics.TypeLabel(en.typ.TypeURL),
						State: en.state.MetricLabel(en.value != nil)}]++
				}
			}
		}
	}
	return g, true
}
