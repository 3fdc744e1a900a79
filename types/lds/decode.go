package lds

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/typedconfig"
	"github.com/xdsengine/xdsengine/types/internal/validation"
	"github.com/xdsengine/xdsengine/types/rds"
)

// Message names compared with the part of an Any's type URL after the last
// '/'; what precedes it is an opaque host that servers may vary.
const (
	hcmMessage = "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
)

// hcmField is the path of the HttpConnectionManager in a Listener.
const hcmField = "api_listener.api_listener"

func decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	m := new(listenerv3.Listener)
	if err := proto.Unmarshal(raw, m); err != nil {
		return registry.DecodeResult{}, fmt.Errorf("cannot parse Listener: %w", err)
	}
	l, err := convert(m, opts.KeepRaw(raw))
	if err != nil {
		return registry.DecodeResult{Name: m.GetName()}, err
	}
	return registry.DecodeResult{Name: l.Name, Resource: l}, nil
}

// convert records what the message says; validate judges it. The only
// errors here are embedded messages that do not parse, since nothing can
// be recorded about them.
func convert(m *listenerv3.Listener, raw []byte) (*Listener, error) {
	l := &Listener{Name: m.GetName(), raw: raw}
	api := m.GetApiListener()
	if api == nil {
		return l, nil
	}
	l.hcm.apiListenerSet = true
	l.hcm.typeURL = api.GetApiListener().GetTypeUrl()
	if validation.TypeName(l.hcm.typeURL) != hcmMessage {
		return l, nil
	}
	hcm := new(hcmv3.HttpConnectionManager)
	if err := proto.Unmarshal(api.GetApiListener().GetValue(), hcm); err != nil {
		return nil, &registry.FieldError{Field: hcmField, Rule: "cannot parse HttpConnectionManager: " + err.Error()}
	}

	l.hcm.xffNumTrustedHops = hcm.GetXffNumTrustedHops()
	l.hcm.originalIPDetectionExtensions = len(hcm.GetOriginalIpDetectionExtensions())
	l.MaxStreamDuration = hcm.GetCommonHttpProtocolOptions().GetMaxStreamDuration().AsDuration()

	switch s := hcm.GetRouteSpecifier().(type) {
	case *hcmv3.HttpConnectionManager_Rds:
		l.hcm.routeSpecifier = routeSpecifierRDS
		l.hcm.rdsConfigSource = configSourceOf(s.Rds.GetConfigSource())
		l.RouteConfigName = s.Rds.GetRouteConfigName()
	case *hcmv3.HttpConnectionManager_RouteConfig:
		l.hcm.routeSpecifier = routeSpecifierInline
		rc, err := rds.FromProto(s.RouteConfig)
		if err != nil {
			return nil, registry.FieldWithin(hcmField+".route_config", err)
		}
		l.RouteConfig = rc
	case *hcmv3.HttpConnectionManager_ScopedRoutes:
		l.hcm.routeSpecifier = routeSpecifierScoped
	}

	if n := len(hcm.GetHttpFilters()); n > 0 {
		l.HTTPFilters = make([]HTTPFilter, n)
	}
	for i, f := range hcm.GetHttpFilters() {
		typeURL, err := typedconfig.TypeURL(f.GetTypedConfig())
		if err != nil {
			return nil, &registry.FieldError{Field: fmt.Sprintf("%s.http_filters[%d].typed_config", hcmField, i), Rule: err.Error()}
		}
		l.HTTPFilters[i] = HTTPFilter{Name: f.GetName(), ConfigTypeURL: typeURL, Optional: f.GetIsOptional()}
	}
	return l, nil
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
