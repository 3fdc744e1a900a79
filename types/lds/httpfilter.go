package lds

import (
	"fmt"

	"github.com/xdsengine/xdsengine/registry"
)

// HTTPFilter is one entry of HttpConnectionManager.http_filters.
type HTTPFilter struct {
	Name string
	// ConfigTypeURL is the type URL of typed_config, looked up inside a
	// TypedStruct wrapper; empty when typed_config is missing.
	ConfigTypeURL string
	// Optional is is_optional: a client or server that does not
	// implement the filter may skip it.
	Optional bool
	// RBAC is the filter's config when it is an RBAC filter of a server's
	// filter chain (gRFC A41); nil otherwise.
	RBAC *RBAC
}

const (
	routerMessage = "envoy.extensions.filters.http.router.v3.Router"
	rbacMessage   = "envoy.extensions.filters.http.rbac.v3.RBAC"
)

// filterSupport says where gRPC runs an HTTP filter.
type filterSupport struct {
	client, server, terminal bool
}

// httpFilters are the HTTP filter config types grpc-go implements by
// default (gRFC A39, A33, A41, A83), by message name, and where it runs
// them; C-core has the same table. ext_proc and ext_authz are left out,
// as grpc-go gates them behind environment variables.
var httpFilters = map[string]filterSupport{
	routerMessage: {client: true, server: true, terminal: true},
	"envoy.extensions.filters.http.fault.v3.HTTPFault":                {client: true},
	"envoy.extensions.filters.http.gcp_authn.v3.GcpAuthnFilterConfig": {client: true},
	rbacMessage: {server: true},
}

// validateHTTPFilters applies gRFC A39 on the side that runs them: names
// are present and unique, every filter is one that side implements (or,
// custom, one of the client's own) unless it is optional, and of the
// filters it runs the router, which ends every chain, is last and only
// last. A server's RBAC configs must satisfy gRFC A41. at is the
// HttpConnectionManager's path.
func validateHTTPFilters(filters []HTTPFilter, at string, server bool, custom func(typeName string) bool, errs *registry.FieldErrors) {
	field := func(i int, rest string) string { return fmt.Sprintf("%s.http_filters[%d]%s", at, i, rest) }
	side, runs := "clients", func(s filterSupport) bool { return s.client }
	if server {
		side, runs = "servers", func(s filterSupport) bool { return s.server }
	}
	errorsBefore := errs.Len()
	seen := make(map[string]bool, len(filters))
	var run []int // indexes of the filters this side runs
	for i, f := range filters {
		if f.Name == "" {
			errs.Add(field(i, ".name"), "must be non-empty")
			continue
		}
		if seen[f.Name] {
			errs.Addf(field(i, ".name"), "duplicate filter name %q", f.Name)
			continue
		}
		seen[f.Name] = true
		support, known := httpFilters[registry.TypeName(f.ConfigTypeURL)]
		if !known && custom != nil && f.ConfigTypeURL != "" && custom(registry.TypeName(f.ConfigTypeURL)) {
			support, known = filterSupport{client: true}, true // the client's own: not terminal
		}
		switch {
		case known && runs(support):
			run = append(run, i)
			// A config gRPC implements is parsed, and must be valid,
			// even in an optional filter.
			if f.RBAC != nil {
				f.RBAC.problems.reportTo(field(i, ".typed_config"), errs)
			}
		case f.Optional:
		case f.ConfigTypeURL == "":
			errs.Add(field(i, ".typed_config"), "field not present")
		case known:
			errs.Addf(field(i, ".typed_config"), "filter type %q is not supported on %s", f.ConfigTypeURL, side)
		default:
			errs.Addf(field(i, ".typed_config"), "unsupported filter type %q", f.ConfigTypeURL)
		}
	}
	if len(run) == 0 {
		// Filters with errors of their own would be in run if fixed, so
		// an empty chain is only worth reporting on its own.
		if errs.Len() == errorsBefore {
			what := "client"
			if server {
				what = "server"
			}
			errs.Addf(at+".http_filters", "no filter the %s implements: the chain must end with the router filter", what)
		}
		return
	}
	for k, i := range run {
		terminal := httpFilters[registry.TypeName(filters[i].ConfigTypeURL)].terminal // false for the client's own
		last := k == len(run)-1
		switch {
		case terminal && !last:
			errs.Addf(field(i, ""), "terminal filter %q must be the last filter", filters[i].Name)
		case !terminal && last:
			errs.Addf(field(i, ""), "last filter %q is not terminal: the router filter must end the chain", filters[i].Name)
		}
	}
}
