package builtin

import (
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// Types returns the built-in resource types, in dependency order
// (Listener first). The slice is new on every call. Whether LEDS and
// EDS's use of it are on is not decided here but by the engine's switches
// (engine.Config.Switches), which the types consult.
func Types() []registry.ResourceType {
	return []registry.ResourceType{lds.Type, rds.Type, cds.Type, eds.Type, leds.Type, leds.EndpointType}
}

// Registry returns a new registry holding [Types]. It panics only if the
// built-in types are inconsistent with each other (a malformed or
// duplicate type URL), which is a bug in this module that its tests catch;
// it never depends on input.
func Registry() *registry.Registry {
	r, err := registry.New(Types()...)
	if err != nil {
		panic("builtin: inconsistent built-in resource types: " + err.Error())
	}
	return r
}
