package eds

import "github.com/xdsengine/xdsengine/engine"

// Watcher receives the updates of one ClusterLoadAssignment.
type Watcher = engine.TypedWatcher[*ClusterLoadAssignment]

// Watch watches the ClusterLoadAssignment called name (a Cluster's EDS
// service name) on src. The resources it delivers are as decoded: LEDS
// localities have no endpoints until composed, which a dependency graph
// watch does.
func Watch(src engine.Source, name string, w Watcher) (cancel func()) {
	return engine.Watch[*ClusterLoadAssignment](src, TypeURL, name, w)
}
