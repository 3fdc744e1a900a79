//lint:file-ignore SA1019 a deprecated ConfigSource.path must be rejected, so a test builds one

package lds_test

import (
	"fmt"
	"time"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	gcpauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
)

const (
	routerTypeURL = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	faultTypeURL  = "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
	luaTypeURL    = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"
	cdsTypeURL    = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
)

// testCase is one resource, valid (want set) or not (wantErr set). The
// same table drives the decode tests, the conformance kit and the fuzz
// seed corpus.
type testCase struct {
	name string
	msg  *listenerv3.Listener
	raw  []byte // used instead of msg when set
	// want is the decoded Listener; its RouteConfig is compared with
	// wantRouteConfig's decoded form instead.
	want            *lds.Listener
	wantRouteConfig *routev3.RouteConfiguration
	wantDeps        []registry.Ref
	// wantErr lists "|"-separated substrings of the error.
	wantErr string
}

func (c testCase) resourceName() string {
	if c.raw != nil {
		return ""
	}
	return c.msg.GetName()
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func filter(name string, cfg proto.Message) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(cfg)}}
}

func routerFilter() *hcmv3.HttpFilter { return filter("router", &routerv3.Router{}) }

func optionalFilter(name, typeURL string) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, IsOptional: true, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: typeURL}}}
}

func adsRDS(routeConfigName string) *hcmv3.HttpConnectionManager_Rds {
	return &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
		RouteConfigName: routeConfigName,
		ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
	}}
}

// listener wraps hcm in an API listener called name.
func listener(name string, hcm *hcmv3.HttpConnectionManager) *listenerv3.Listener {
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: mustAny(hcm)}}
}

// rdsListener is a valid Listener using RDS, changed by edit.
func rdsListener(edit func(*hcmv3.HttpConnectionManager)) *listenerv3.Listener {
	hcm := &hcmv3.HttpConnectionManager{
		RouteSpecifier: adsRDS("routes"),
		HttpFilters:    []*hcmv3.HttpFilter{routerFilter()},
	}
	if edit != nil {
		edit(hcm)
	}
	return listener("lis", hcm)
}

func inlineRoutes(domains []string, cluster string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: "inline",
		VirtualHosts: []*routev3.VirtualHost{{
			Domains: domains,
			Routes: []*routev3.Route{{
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: ""}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
			}},
		}},
	}
}

func validCases() []testCase {
	return []testCase{
		{
			name: "rds over ads",
			msg:  rdsListener(nil),
			want: &lds.Listener{
				Name:            "lis",
				RouteConfigName: "routes",
				HTTPFilters:     []lds.HTTPFilter{{Name: "router", ConfigTypeURL: routerTypeURL}},
			},
			wantDeps: []registry.Ref{{TypeURL: rds.TypeURL, Name: "routes"}},
		},
		{
			name: "rds over self with filters",
			msg: rdsListener(func(h *hcmv3.HttpConnectionManager) {
				h.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
					RouteConfigName: "xdstp://authority/envoy.config.route.v3.RouteConfiguration/routes",
					ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}}},
				}}
				h.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: durationpb.New(3 * time.Second)}
				h.HttpFilters = []*hcmv3.HttpFilter{
					filter("fault", &faultv3.HTTPFault{}),
					optionalFilter("lua", luaTypeURL),
					// Server-only, but optional: skipped.
					{Name: "rbac", IsOptional: true, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&rbacv3.RBAC{})}},
					filter("authn", &gcpauthnv3.GcpAuthnFilterConfig{}),
					filter("router", &xdstypev3.TypedStruct{TypeUrl: routerTypeURL}),
					// Optional filters after the router do not count.
					optionalFilter("late", luaTypeURL),
				}
			}),
			want: &lds.Listener{
				Name:              "lis",
				RouteConfigName:   "xdstp://authority/envoy.config.route.v3.RouteConfiguration/routes",
				MaxStreamDuration: 3 * time.Second,
				HTTPFilters: []lds.HTTPFilter{
					{Name: "fault", ConfigTypeURL: faultTypeURL},
					{Name: "lua", ConfigTypeURL: luaTypeURL, Optional: true},
					{Name: "rbac", ConfigTypeURL: "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC", Optional: true},
					{Name: "authn", ConfigTypeURL: "type.googleapis.com/envoy.extensions.filters.http.gcp_authn.v3.GcpAuthnFilterConfig"},
					{Name: "router", ConfigTypeURL: routerTypeURL},
					{Name: "late", ConfigTypeURL: luaTypeURL, Optional: true},
				},
			},
			wantDeps: []registry.Ref{{TypeURL: rds.TypeURL, Name: "xdstp://authority/envoy.config.route.v3.RouteConfiguration/routes"}},
		},
		{
			name: "inline route config",
			msg: rdsListener(func(h *hcmv3.HttpConnectionManager) {
				h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: inlineRoutes([]string{"*"}, "backend")}
			}),
			want: &lds.Listener{
				Name:        "lis",
				HTTPFilters: []lds.HTTPFilter{{Name: "router", ConfigTypeURL: routerTypeURL}},
			},
			wantRouteConfig: inlineRoutes([]string{"*"}, "backend"),
			wantDeps:        []registry.Ref{{TypeURL: cdsTypeURL, Name: "backend"}},
		},
	}
}

func invalidCases() []testCase {
	hcmWith := func(edit func(*hcmv3.HttpConnectionManager)) *listenerv3.Listener { return rdsListener(edit) }
	filters := func(fs ...*hcmv3.HttpFilter) *listenerv3.Listener {
		return rdsListener(func(h *hcmv3.HttpConnectionManager) { h.HttpFilters = fs })
	}
	withAPIListener := func(a *anypb.Any) *listenerv3.Listener {
		return &listenerv3.Listener{Name: "lis", ApiListener: &listenerv3.ApiListener{ApiListener: a}}
	}
	rdsWith := func(r *hcmv3.Rds) *listenerv3.Listener {
		return hcmWith(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = &hcmv3.HttpConnectionManager_Rds{Rds: r} })
	}
	inline := func(rc *routev3.RouteConfiguration) *listenerv3.Listener {
		return hcmWith(func(h *hcmv3.HttpConnectionManager) {
			h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
		})
	}
	badFilterConfig := inlineRoutes([]string{"*"}, "c")
	badFilterConfig.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{
		"f": {TypeUrl: "type.googleapis.com/envoy.config.route.v3.FilterConfig", Value: []byte{0x0a, 0xff}},
	}

	return []testCase{
		{
			// C-core: "Listener has neither address nor ApiListener".
			name:    "neither address nor api_listener",
			msg:     &listenerv3.Listener{Name: "lis"},
			wantErr: "address: field not present: a Listener needs an address (a server's) or an api_listener (a client's)",
		},
		{
			name:    "api listener without config",
			msg:     withAPIListener(nil),
			wantErr: "api_listener.api_listener: field not present",
		},
		{
			name: "v2 HttpConnectionManager",
			msg: withAPIListener(&anypb.Any{
				TypeUrl: "type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager",
			}),
			wantErr: `api_listener.api_listener: unsupported type "type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager"`,
		},
		{
			name: "malformed HttpConnectionManager",
			msg: withAPIListener(&anypb.Any{
				TypeUrl: "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
				Value:   []byte{0x0a, 0xff},
			}),
			wantErr: "api_listener.api_listener: cannot parse HttpConnectionManager",
		},
		{
			name:    "xff trusted hops",
			msg:     hcmWith(func(h *hcmv3.HttpConnectionManager) { h.XffNumTrustedHops = 1 }),
			wantErr: "api_listener.api_listener.xff_num_trusted_hops: must be zero",
		},
		{
			name: "original IP detection",
			msg: hcmWith(func(h *hcmv3.HttpConnectionManager) {
				h.OriginalIpDetectionExtensions = []*corev3.TypedExtensionConfig{{Name: "x"}}
			}),
			wantErr: "api_listener.api_listener.original_ip_detection_extensions: must be empty",
		},
		{
			name:    "no route specifier",
			msg:     hcmWith(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = nil }),
			wantErr: "api_listener.api_listener: neither rds nor route_config is set",
		},
		{
			name: "scoped routes",
			msg: hcmWith(func(h *hcmv3.HttpConnectionManager) {
				h.RouteSpecifier = &hcmv3.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &hcmv3.ScopedRoutes{}}
			}),
			wantErr: "api_listener.api_listener.scoped_routes: not supported",
		},
		{
			name:    "rds without config source",
			msg:     rdsWith(&hcmv3.Rds{RouteConfigName: "routes"}),
			wantErr: "api_listener.api_listener.rds.config_source: field not present",
		},
		{
			name: "rds from a file",
			msg: rdsWith(&hcmv3.Rds{
				RouteConfigName: "routes",
				ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Path{Path: "/etc/routes.yaml"}},
			}),
			wantErr: "api_listener.api_listener.rds.config_source: must specify ads or self",
		},
		{
			name:    "rds without name",
			msg:     hcmWith(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = adsRDS("") }),
			wantErr: "api_listener.api_listener.rds.route_config_name: must be non-empty",
		},
		{
			name: "negative max stream duration",
			msg: hcmWith(func(h *hcmv3.HttpConnectionManager) {
				h.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: durationpb.New(-time.Second)}
			}),
			wantErr: "api_listener.api_listener.common_http_protocol_options.max_stream_duration: must be non-negative",
		},
		{
			name: "invalid inline route config",
			msg:  inline(inlineRoutes(nil, "")),
			wantErr: "api_listener.api_listener.route_config.virtual_hosts[0].domains: must be non-empty|" +
				"api_listener.api_listener.route_config.virtual_hosts[0].routes[0].route.cluster: must be non-empty",
		},
		{
			name:    "malformed inline route config",
			msg:     inline(badFilterConfig),
			wantErr: "api_listener.api_listener.route_config.virtual_hosts[0].typed_per_filter_config[f]: cannot parse FilterConfig",
		},
		{
			name:    "no http filters",
			msg:     filters(),
			wantErr: "api_listener.api_listener.http_filters: no filter the client implements",
		},
		{
			name:    "only optional filters gRPC lacks",
			msg:     filters(optionalFilter("lua", luaTypeURL)),
			wantErr: "api_listener.api_listener.http_filters: no filter the client implements",
		},
		{
			name:    "filter without name",
			msg:     filters(filter("", &faultv3.HTTPFault{}), routerFilter()),
			wantErr: "api_listener.api_listener.http_filters[0].name: must be non-empty",
		},
		{
			name:    "duplicate filter names",
			msg:     filters(filter("router", &faultv3.HTTPFault{}), routerFilter()),
			wantErr: `api_listener.api_listener.http_filters[1].name: duplicate filter name "router"`,
		},
		{
			name:    "unsupported filter",
			msg:     filters(&hcmv3.HttpFilter{Name: "lua", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: luaTypeURL}}}, routerFilter()),
			wantErr: `api_listener.api_listener.http_filters[0].typed_config: unsupported filter type "` + luaTypeURL + `"`,
		},
		{
			name:    "filter without config",
			msg:     filters(&hcmv3.HttpFilter{Name: "ecds"}, routerFilter()),
			wantErr: "api_listener.api_listener.http_filters[0].typed_config: field not present",
		},
		{
			name:    "server-only filter",
			msg:     filters(filter("rbac", &rbacv3.RBAC{}), routerFilter()),
			wantErr: `api_listener.api_listener.http_filters[0].typed_config: filter type "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC" is not supported on clients`,
		},
		{
			name: "router not last",
			msg:  filters(routerFilter(), filter("fault", &faultv3.HTTPFault{})),
			wantErr: `api_listener.api_listener.http_filters[0]: terminal filter "router" must be the last filter|` +
				`api_listener.api_listener.http_filters[1]: last filter "fault" is not terminal`,
		},
		{
			name:    "no router",
			msg:     filters(filter("fault", &faultv3.HTTPFault{})),
			wantErr: `api_listener.api_listener.http_filters[0]: last filter "fault" is not terminal`,
		},
		{
			name:    "two routers",
			msg:     filters(routerFilter(), filter("router2", &routerv3.Router{})),
			wantErr: `api_listener.api_listener.http_filters[0]: terminal filter "router" must be the last filter`,
		},
		{
			name: "malformed TypedStruct filter config",
			msg: filters(&hcmv3.HttpFilter{Name: "x", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: &anypb.Any{
				TypeUrl: "type.googleapis.com/xds.type.v3.TypedStruct", Value: []byte{0x0a, 0xff},
			}}}),
			wantErr: "api_listener.api_listener.http_filters[0].typed_config: cannot parse TypedStruct",
		},
		{
			name: "every problem listed",
			msg: hcmWith(func(h *hcmv3.HttpConnectionManager) {
				h.XffNumTrustedHops = 2
				h.RouteSpecifier = adsRDS("")
				h.HttpFilters = []*hcmv3.HttpFilter{filter("fault", &faultv3.HTTPFault{})}
			}),
			wantErr: "api_listener.api_listener.xff_num_trusted_hops: must be zero|" +
				"api_listener.api_listener.rds.route_config_name: must be non-empty|" +
				`api_listener.api_listener.http_filters[0]: last filter "fault" is not terminal`,
		},
		{
			name:    "not a Listener",
			raw:     []byte{0x0a, 0x05, 'l'},
			wantErr: "cannot parse Listener",
		},
	}
}

func allCases() []testCase { return append(validCases(), invalidCases()...) }

func marshal(c testCase) []byte {
	if c.raw != nil {
		return c.raw
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.msg)
	if err != nil {
		panic(fmt.Sprintf("case %q: %v", c.name, err))
	}
	return b
}
