package lds

import (
	"fmt"

	"github.com/xdsengine/xdsengine/registry"
)

// validator validates Listeners with a type's Options.
type validator struct {
	httpFilter func(typeName string) bool // nil: gRPC's filters alone
	routes     registry.Validator         // of an inline route configuration
}

func (v validator) validate(r registry.Resource, opts registry.DecodeOptions) error {
	l, ok := r.(*Listener)
	if !ok || l == nil {
		return fmt.Errorf("lds: cannot validate %T, want *lds.Listener", r)
	}
	var errs registry.FieldErrors
	switch {
	case l.Server != nil:
		v.validateServer(l.Server, opts, &errs)
	case l.api.typeURL == "":
		errs.Add(hcmField, "field not present")
	case !isHCMType(l.api.typeURL):
		errs.Addf(hcmField, "unsupported type %q, want %s", l.api.typeURL, hcmMessage)
	default:
		h := HTTPConnectionManager{
			RouteConfigName:   l.RouteConfigName,
			RouteConfig:       l.RouteConfig,
			HTTPFilters:       l.HTTPFilters,
			MaxStreamDuration: l.MaxStreamDuration,
			facts:             l.hcm,
		}
		v.validateHCM(&h, hcmField, false, opts, &errs)
	}
	return errs.Err()
}
