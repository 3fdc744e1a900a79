package lds

import "github.com/xdsengine/xdsengine/engine"

// Watcher receives the updates of one Listener.
type Watcher = engine.TypedWatcher[*Listener]

// Watch watches the Listener called name on src. The calling contract,
// including done and the use of cancel from inside a callback, is
// engine.Source's.
func Watch(src engine.Source, name string, w Watcher) (cancel func()) {
	return engine.Watch[*Listener](src, TypeURL, name, w)
}
