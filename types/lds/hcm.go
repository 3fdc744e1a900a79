package lds

import (
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/typedconfig"
	"github.com/xdsengine/xdsengine/types/rds"
)

// hcmMessage is compared with the part of an Any's type URL after the
// last '/'; what precedes it is an opaque host that servers may vary.
const hcmMessage = "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

// HTTPConnectionManager is the HttpConnectionManager of a server's filter
// chain. Exactly one of RouteConfigName and RouteConfig is set in a valid
// one, except in a Listener composed by package graph (see
// [Listener.Compose]), where a chain using RDS has both.
type HTTPConnectionManager struct {
	// RouteConfigName names the RouteConfiguration to fetch with RDS.
	RouteConfigName string
	// RouteConfig is the route configuration carried inline.
	RouteConfig *rds.RouteConfiguration
	// HTTPFilters are the HTTP filters in order, as sent, including
	// optional filters of types gRPC does not implement, which a server
	// skips.
	HTTPFilters []HTTPFilter
	// MaxStreamDuration is common_http_protocol_options.max_stream_duration.
	// Zero means no limit.
	MaxStreamDuration time.Duration

	facts hcmFacts
}

type routeSpecifier int

const (
	routeSpecifierNone routeSpecifier = iota
	routeSpecifierRDS
	routeSpecifierInline
	routeSpecifierScoped
)

type configSource int

const (
	configSourceMissing configSource = iota
	configSourceADS
	configSourceSelf
	configSourceOther
)

// hcmFacts hold what validation needs to know about an
// HttpConnectionManager that a user of a valid one does not.
type hcmFacts struct {
	routeSpecifier                routeSpecifier
	rdsConfigSource               configSource
	xffNumTrustedHops             uint32
	originalIPDetectionExtensions int
}

// convertHCM records what an HttpConnectionManager says; validateHCM
// judges it. server says whose filters to decode: a server's RBAC filters
// carry configs it needs, a client skips them. Errors are messages that
// do not parse, their fields relative to the HttpConnectionManager.
func convertHCM(value []byte, server bool) (HTTPConnectionManager, error) {
	var out HTTPConnectionManager
	m := new(hcmv3.HttpConnectionManager)
	if err := proto.Unmarshal(value, m); err != nil {
		return out, &registry.FieldError{Rule: "cannot parse HttpConnectionManager: " + err.Error()}
	}
	out.facts.xffNumTrustedHops = m.GetXffNumTrustedHops()
	out.facts.originalIPDetectionExtensions = len(m.GetOriginalIpDetectionExtensions())
	out.MaxStreamDuration = m.GetCommonHttpProtocolOptions().GetMaxStreamDuration().AsDuration()

	switch s := m.GetRouteSpecifier().(type) {
	case *hcmv3.HttpConnectionManager_Rds:
		out.facts.routeSpecifier = routeSpecifierRDS
		out.facts.rdsConfigSource = configSourceOf(s.Rds.GetConfigSource())
		out.RouteConfigName = s.Rds.GetRouteConfigName()
	case *hcmv3.HttpConnectionManager_RouteConfig:
		out.facts.routeSpecifier = routeSpecifierInline
		rc, err := rds.FromProto(s.RouteConfig)
		if err != nil {
			return out, registry.FieldWithin("route_config", err)
		}
		out.RouteConfig = rc
	case *hcmv3.HttpConnectionManager_ScopedRoutes:
		out.facts.routeSpecifier = routeSpecifierScoped
	}

	if n := len(m.GetHttpFilters()); n > 0 {
		out.HTTPFilters = make([]HTTPFilter, n)
	}
	for i, f := range m.GetHttpFilters() {
		at := fmt.Sprintf("http_filters[%d].typed_config", i)
		typeURL, err := typedconfig.TypeURL(f.GetTypedConfig())
		if err != nil {
			return out, &registry.FieldError{Field: at, Rule: err.Error()}
		}
		hf := HTTPFilter{Name: f.GetName(), ConfigTypeURL: typeURL, Optional: f.GetIsOptional()}
		if server && registry.TypeName(typeURL) == rbacMessage {
			if hf.RBAC, err = convertRBACFilter(f.GetTypedConfig()); err != nil {
				return out, registry.FieldWithin(at, err)
			}
		}
		out.HTTPFilters[i] = hf
	}
	return out, nil
}

func configSourceOf(cs *corev3.ConfigSource) configSource {
	switch {
	case cs == nil:
		return configSourceMissing
	case cs.GetAds() != nil:
		return configSourceADS
	case cs.GetSelf() != nil:
		return configSourceSelf
	}
	return configSourceOther
}

// isHCMType reports whether an Any of type URL typeURL holds an
// HttpConnectionManager message (a TypedStruct's JSON cannot carry one
// that gRPC reads).
func isHCMType(typeURL string) bool { return registry.TypeName(typeURL) == hcmMessage }

// validateHCM applies the rules common to a client's API listener and a
// server's filter chain; at is the HttpConnectionManager's path.
func (v validator) validateHCM(h *HTTPConnectionManager, at string, server bool, opts registry.DecodeOptions, errs *registry.FieldErrors) {
	// gRFC A41: gRPC takes the peer address from the connection, so it
	// rejects settings that would take it from headers.
	if h.facts.xffNumTrustedHops != 0 {
		errs.Add(at+".xff_num_trusted_hops", "must be zero")
	}
	if h.facts.originalIPDetectionExtensions != 0 {
		errs.Add(at+".original_ip_detection_extensions", "must be empty")
	}
	if h.MaxStreamDuration < 0 {
		errs.Add(at+".common_http_protocol_options.max_stream_duration", "must be non-negative")
	}

	switch h.facts.routeSpecifier {
	case routeSpecifierNone:
		errs.Add(at, "neither rds nor route_config is set")
	case routeSpecifierScoped:
		errs.Add(at+".scoped_routes", "not supported: use rds or route_config")
	case routeSpecifierRDS:
		// gRFC A27: the RouteConfiguration must come over the same ADS
		// stream; "self" means the same server, which gRPC reads the
		// same way.
		switch h.facts.rdsConfigSource {
		case configSourceMissing:
			errs.Add(at+".rds.config_source", "field not present")
		case configSourceOther:
			errs.Add(at+".rds.config_source", "must specify ads or self")
		}
		if h.RouteConfigName == "" {
			errs.Add(at+".rds.route_config_name", "must be non-empty")
		}
	case routeSpecifierInline:
		// gRFC A36: RDS does not tell client and server use apart, so an
		// inline route configuration is held to the same rules on both.
		if err := v.routes.Validate(h.RouteConfig, opts); err != nil {
			errs.AddWithin(at+".route_config", err)
		}
	}

	custom := v.httpFilter
	if server {
		custom = nil // a server's chains run gRPC's filters alone
	}
	validateHTTPFilters(h.HTTPFilters, at, server, custom, errs)
}
