package cds

import "github.com/xdsengine/xdsengine/engine"

// Watcher receives the updates of one Cluster.
type Watcher = engine.TypedWatcher[*Cluster]

// Watch watches the Cluster called name on src.
func Watch(src engine.Source, name string, w Watcher) (cancel func()) {
	return engine.Watch[*Cluster](src, TypeURL, name, w)
}
