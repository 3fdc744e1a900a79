package rds

import "github.com/xdsengine/xdsengine/engine"

// Watcher receives the updates of one RouteConfiguration.
type Watcher = engine.TypedWatcher[*RouteConfiguration]

// Watch watches the RouteConfiguration called name on src. The calling
// contract, including done and the use of cancel from inside a callback,
// is engine.Source's.
func Watch(src engine.Source, name string, w Watcher) (cancel func()) {
	return engine.Watch[*RouteConfiguration](src, TypeURL, name, w)
}
