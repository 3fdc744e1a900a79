package leds

import "github.com/xdsengine/xdsengine/engine"

// Watcher receives the updates of one LbEndpointCollection.
type Watcher = engine.TypedWatcher[*LbEndpointCollection]

// Watch watches the collection called name on src. The engine subscribes
// only to names it is asked for, so name must be the exact (canonical)
// leds_collection_name an EDS locality gives.
func Watch(src engine.Source, name string, w Watcher) (cancel func()) {
	return engine.Watch[*LbEndpointCollection](src, TypeURL, name, w)
}
