package builtin

import (
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// Types returns the built-in resource types, in dependency order
// (Listener first), honouring GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK as
// [TypesFor] does. The slice is new on every call.
func Types() []registry.ResourceType {
	return TypesFor(engine.SwitchesFromEnv())
}

// TypesFor returns the built-in resource types for the given switches:
// with DisableEndpointFallback, LEDS (gRFC A95) is left out, so its client
// feature is not advertised, and EDS ignores leds_cluster_locality_config.
func TypesFor(sw engine.Switches) []registry.ResourceType {
	if sw.DisableEndpointFallback {
		return []registry.ResourceType{lds.Type, rds.Type, cds.Type, eds.NewType(eds.Options{IgnoreLEDS: true})}
	}
	return []registry.ResourceType{lds.Type, rds.Type, cds.Type, eds.Type, leds.Type}
}

// Registry returns a new registry holding [Types]. It panics only if the
// built-in types are inconsistent with each other (a malformed or
// duplicate type URL), which is a bug in this module that its tests catch;
// it never depends on input.
func Registry() *registry.Registry {
	return RegistryFor(engine.SwitchesFromEnv())
}

// RegistryFor returns a new registry holding [TypesFor] sw.
func RegistryFor(sw engine.Switches) *registry.Registry {
	r, err := registry.New(TypesFor(sw)...)
	if err != nil {
		panic("builtin: inconsistent built-in resource types: " + err.Error())
	}
	return r
}
