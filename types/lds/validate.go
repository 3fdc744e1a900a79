package lds

import (
	"fmt"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/validation"
	"github.com/xdsengine/xdsengine/types/rds"
)

// httpFilterSupport is what a gRPC client can do with an HTTP filter.
type httpFilterSupport int

const (
	filterServerOnly httpFilterSupport = iota
	filterClient
	filterClientTerminal
)

// httpFilters are the HTTP filter config types grpc-go implements by
// default (gRFC A39, A33, A41, A83), by message name. ext_proc and
// ext_authz are left out, as grpc-go gates them behind environment
// variables.
var httpFilters = map[string]httpFilterSupport{
	"envoy.extensions.filters.http.router.v3.Router":                  filterClientTerminal,
	"envoy.extensions.filters.http.fault.v3.HTTPFault":                filterClient,
	"envoy.extensions.filters.http.gcp_authn.v3.GcpAuthnFilterConfig": filterClient,
	"envoy.extensions.filters.http.rbac.v3.RBAC":                      filterServerOnly,
}

func validate(r registry.Resource, opts registry.DecodeOptions) error {
	l, ok := r.(*Listener)
	if !ok || l == nil {
		return fmt.Errorf("lds: cannot validate %T, want *lds.Listener", r)
	}
	var errs registry.FieldErrors
	switch {
	case !l.hcm.apiListenerSet:
		errs.Add("api_listener", "field not present: only client-side (API) listeners are supported")
	case l.hcm.typeURL == "":
		errs.Add(hcmField, "field not present")
	case validation.TypeName(l.hcm.typeURL) != hcmMessage:
		errs.Addf(hcmField, "unsupported type %q, want %s", l.hcm.typeURL, hcmMessage)
	default:
		validateHCM(l, opts, &errs)
	}
	return errs.Err()
}

func validateHCM(l *Listener, opts registry.DecodeOptions, errs *registry.FieldErrors) {
	// gRFC A41: gRPC takes the peer address from the connection, so it
	// rejects settings that would take it from headers.
	if l.hcm.xffNumTrustedHops != 0 {
		errs.Add(hcmField+".xff_num_trusted_hops", "must be zero")
	}
	if l.hcm.originalIPDetectionExtensions != 0 {
		errs.Add(hcmField+".original_ip_detection_extensions", "must be empty")
	}
	if l.MaxStreamDuration < 0 {
		errs.Add(hcmField+".common_http_protocol_options.max_stream_duration", "must be non-negative")
	}

	switch l.hcm.routeSpecifier {
	case routeSpecifierNone:
		errs.Add(hcmField, "neither rds nor route_config is set")
	case routeSpecifierScoped:
		errs.Add(hcmField+".scoped_routes", "not supported: use rds or route_config")
	case routeSpecifierRDS:
		// gRFC A27: the RouteConfiguration must come over the same ADS
		// stream; "self" means the same server, which gRPC reads the
		// same way.
		switch l.hcm.rdsConfigSource {
		case configSourceMissing:
			errs.Add(hcmField+".rds.config_source", "field not present")
		case configSourceOther:
			errs.Add(hcmField+".rds.config_source", "must specify ads or self")
		}
		if l.RouteConfigName == "" {
			errs.Add(hcmField+".rds.route_config_name", "must be non-empty")
		}
	case routeSpecifierInline:
		if err := rds.Type.Validator.Validate(l.RouteConfig, opts); err != nil {
			errs.AddWithin(hcmField+".route_config", err)
		}
	}

	validateHTTPFilters(l.HTTPFilters, errs)
}

// validateHTTPFilters applies gRFC A39: names are present and unique,
// every filter is one the client implements unless it is optional, and of
// the filters the client runs the router, which ends every chain, is last
// and only last.
func validateHTTPFilters(filters []HTTPFilter, errs *registry.FieldErrors) {
	at := func(i int, rest string) string { return fmt.Sprintf("%s.http_filters[%d]%s", hcmField, i, rest) }
	errorsBefore := errs.Len()
	seen := make(map[string]bool, len(filters))
	var run []int // indexes of the filters a client runs
	for i, f := range filters {
		if f.Name == "" {
			errs.Add(at(i, ".name"), "must be non-empty")
			continue
		}
		if seen[f.Name] {
			errs.Addf(at(i, ".name"), "duplicate filter name %q", f.Name)
			continue
		}
		seen[f.Name] = true
		support, known := httpFilters[validation.TypeName(f.ConfigTypeURL)]
		switch {
		case known && support != filterServerOnly:
			run = append(run, i)
		case f.Optional:
		case f.ConfigTypeURL == "":
			errs.Add(at(i, ".typed_config"), "field not present")
		case known:
			errs.Addf(at(i, ".typed_config"), "filter type %q is not supported on clients", f.ConfigTypeURL)
		default:
			errs.Addf(at(i, ".typed_config"), "unsupported filter type %q", f.ConfigTypeURL)
		}
	}
	if len(run) == 0 {
		// Filters with errors of their own would be in run if fixed, so
		// an empty chain is only worth reporting on its own.
		if errs.Len() == errorsBefore {
			errs.Add(hcmField+".http_filters", "no filter the client implements: the chain must end with the router filter")
		}
		return
	}
	for k, i := range run {
		terminal := httpFilters[validation.TypeName(filters[i].ConfigTypeURL)] == filterClientTerminal
		last := k == len(run)-1
		switch {
		case terminal && !last:
			errs.Addf(at(i, ""), "terminal filter %q must be the last filter", filters[i].Name)
		case !terminal && last:
			errs.Addf(at(i, ""), "last filter %q is not terminal: the router filter must end the chain", filters[i].Name)
		}
	}
}
