package xdsgrpc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	udpatypepb "github.com/cncf/xds/go/udpa/type/v1"
	xdstypepb "github.com/cncf/xds/go/xds/type/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// Filter is an HTTP filter of the program's own (gRFC A39): an entry of
// the Listener's http_filters whose config has type TypeURL runs, for the
// RPCs of every route, as a client interceptor that Build makes for that
// route. An engine whose registry comes from Registry with the filter
// accepts its configs, in the Listener and as a route's override,
// without is_optional; gRPC's own clients reject a filter they do not
// know unless it is marked is_optional, so a configuration also served to
// them sends it optional, and they skip it.
//
// Filters run only on channels made with Builder.NewClient, which
// installs the interceptors; they run after the RPC's route is chosen,
// as gRPC's filters do.
type Filter struct {
	// TypeURL is the type URL of the filter's typed_config (or of the
	// TypedStruct it holds); only the part after the last '/' is
	// compared.
	TypeURL string
	// Build makes the interceptors of one route. config is the filter's
	// typed_config in the Listener; override is the most specific
	// typed_per_filter_config entry for the filter's name (the weighted
	// cluster's, the route's, the virtual host's) or nil. It is called
	// when the configuration changes, not per RPC. An error fails the
	// route's RPCs with UNAVAILABLE.
	Build func(config, override *anypb.Any) (Interceptor, error)
}

// Interceptor is what a Filter does to a route's RPCs. Either may be nil.
type Interceptor struct {
	Unary  grpc.UnaryClientInterceptor
	Stream grpc.StreamClientInterceptor
}

// filterChain is the interceptors of one route (and weighted cluster),
// composed in the Listener's order.
type filterChain struct {
	unary  grpc.UnaryClientInterceptor
	stream grpc.StreamClientInterceptor
}

func chain(ics []Interceptor) *filterChain {
	fc := &filterChain{}
	for i := len(ics) - 1; i >= 0; i-- {
		if u := ics[i].Unary; u != nil {
			next := fc.unary
			if next == nil {
				fc.unary = u
			} else {
				fc.unary = func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					return u(ctx, method, req, reply, cc, func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
						return next(ctx, method, req, reply, cc, invoker, opts...)
					}, opts...)
				}
			}
		}
		if s := ics[i].Stream; s != nil {
			next := fc.stream
			if next == nil {
				fc.stream = s
			} else {
				fc.stream = func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
					return s(ctx, desc, cc, method, func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
						return next(ctx, desc, cc, method, streamer, opts...)
					}, opts...)
				}
			}
		}
	}
	return fc
}

const routerFilter = "envoy.extensions.filters.http.router.v3.Router"

// filterInstance is one of the program's filters in the Listener.
type filterInstance struct {
	name   string
	f      Filter
	config *anypb.Any
}

// filters builds each route's chain of the program's filters.
func (b *configBuilder) filters(lis *lds.Listener, rc *rds.RouteConfiguration, vh *rds.VirtualHost) {
	if len(b.env.filters) == 0 {
		return
	}
	mine := func(hf lds.HTTPFilter) bool { _, ok := b.env.filters[registry.TypeName(hf.ConfigTypeURL)]; return ok }
	if !slices.ContainsFunc(lis.HTTPFilters, mine) {
		return // the common case: the decoded Listener says so, without parsing it again
	}
	lpb, ok := lis.Proto().(*listenerpb.Listener)
	if !ok {
		return
	}
	var hcm hcmpb.HttpConnectionManager
	if err := lpb.GetApiListener().GetApiListener().UnmarshalTo(&hcm); err != nil {
		return
	}
	var instances []filterInstance
	for _, hf := range hcm.GetHttpFilters() {
		cfg := hf.GetTypedConfig()
		name := registry.TypeName(typeURLOf(cfg))
		if name == routerFilter {
			break // filters after the router do not run
		}
		if f, ok := b.env.filters[name]; ok {
			instances = append(instances, filterInstance{name: hf.GetName(), f: f, config: cfg})
		}
	}
	if len(instances) == 0 {
		return
	}
	vhpb, routes := protoRoutes(rc, vh, &hcm)
	b.cfg.filters = true
	for i := range b.cfg.routes {
		r := &b.cfg.routes[i]
		var rpb *routepb.Route
		if i < len(routes) {
			rpb = routes[i]
		}
		entries := max(len(r.clusters), 1)
		r.filters = make([]*filterChain, entries)
		for e := range entries {
			var wcpb *routepb.WeightedCluster_ClusterWeight
			if r.kind == rds.ActionWeightedClusters && rpb != nil {
				if wcs := rpb.GetRoute().GetWeightedClusters().GetClusters(); e < len(wcs) {
					wcpb = wcs[e]
				}
			}
			var ics []Interceptor
			var err error
			for _, in := range instances {
				override := lookupOverride(in.name, wcpb.GetTypedPerFilterConfig(), rpb.GetTypedPerFilterConfig(), vhpb.GetTypedPerFilterConfig())
				ic, berr := in.f.Build(in.config, override)
				if berr != nil {
					err = fmt.Errorf("route %s: filter %q: %w", r.name, in.name, berr)
					break
				}
				ics = append(ics, ic)
			}
			if err != nil {
				r.err = err
				r.kind = rds.ActionUnsupported
				break
			}
			r.filters[e] = chain(ics)
		}
	}
}

// typeURLOf is the type URL a filter config is known by: a TypedStruct's
// own type_url, else the Any's.
func typeURLOf(a *anypb.Any) string {
	if a == nil {
		return ""
	}
	switch registry.TypeName(a.GetTypeUrl()) {
	case "xds.type.v3.TypedStruct":
		var ts xdstypepb.TypedStruct
		if a.UnmarshalTo(&ts) == nil {
			return ts.GetTypeUrl()
		}
	case "udpa.type.v1.TypedStruct":
		var ts udpatypepb.TypedStruct
		if a.UnmarshalTo(&ts) == nil {
			return ts.GetTypeUrl()
		}
	}
	return a.GetTypeUrl()
}

// lookupOverride returns the first of the maps, most specific first,
// that has a config for the filter called name, unwrapped from its
// FilterConfig.
func lookupOverride(name string, maps ...map[string]*anypb.Any) *anypb.Any {
	for _, m := range maps {
		if a := m[name]; a != nil {
			if registry.TypeName(a.GetTypeUrl()) == "envoy.config.route.v3.FilterConfig" {
				var fc routepb.FilterConfig
				if a.UnmarshalTo(&fc) == nil {
					return fc.GetConfig()
				}
			}
			return a
		}
	}
	return nil
}

// protoRoutes returns the virtual host vh as sent and its routes that the
// decoder kept, in the order of vh.Routes. The decoder leaves out routes
// gRPC ignores; each route sent is decoded alone to tell whether it was
// kept, with the decoder's own rules.
func protoRoutes(rc *rds.RouteConfiguration, vh *rds.VirtualHost, hcm *hcmpb.HttpConnectionManager) (*routepb.VirtualHost, []*routepb.Route) {
	var rcpb *routepb.RouteConfiguration
	if inline := hcm.GetRouteConfig(); inline != nil {
		rcpb = inline
	} else {
		rcpb, _ = rc.Proto().(*routepb.RouteConfiguration)
	}
	idx := -1
	for i := range rc.VirtualHosts {
		if &rc.VirtualHosts[i] == vh {
			idx = i
		}
	}
	vhs := rcpb.GetVirtualHosts()
	if idx < 0 || idx >= len(vhs) {
		return nil, nil
	}
	vhpb := vhs[idx]
	var kept []*routepb.Route
	for _, r := range vhpb.GetRoutes() {
		one := &routepb.RouteConfiguration{VirtualHosts: []*routepb.VirtualHost{{Name: "x", Domains: []string{"*"}, Routes: []*routepb.Route{r}}}}
		d, err := rds.FromProto(one)
		if err == nil && len(d.VirtualHosts) == 1 && len(d.VirtualHosts[0].Routes) == 1 {
			kept = append(kept, r)
		}
	}
	return vhpb, kept
}

// binding ties one channel's interceptors to its resolver: the resolver
// stores each configuration it hands the channel, the interceptors read
// it.
type binding struct {
	cfg   atomic.Pointer[channelConfig]
	once  sync.Once
	ready chan struct{} // closed at the resolver's first outcome
}

func newBinding() *binding { return &binding{ready: make(chan struct{})} }

func (bd *binding) set(cfg *channelConfig) {
	bd.cfg.Store(cfg)
	bd.resolved()
}

// resolved says the resolver has an outcome, a configuration or an
// error.
func (bd *binding) resolved() { bd.once.Do(func() { close(bd.ready) }) }

// current returns the channel's configuration. The interceptors run
// before grpc-go resolves the target, which an idle channel starts doing
// only when an RPC needs it: the first RPCs wake the channel and wait
// for the resolver's first outcome, or for their context, so that they
// run the filters as later ones do.
func (bd *binding) current(ctx context.Context, cc *grpc.ClientConn) *channelConfig {
	if cfg := bd.cfg.Load(); cfg != nil {
		return cfg
	}
	cc.Connect()
	select {
	case <-bd.ready:
	case <-ctx.Done():
	}
	return bd.cfg.Load()
}

func (bd *binding) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	cfg := bd.current(ctx, cc)
	if cfg == nil || !cfg.filters || cfg.err != nil {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	sel, err := cfg.selectRoute(method, ctx)
	if err != nil {
		return err
	}
	ctx = context.WithValue(ctx, selectionKey{}, &sel)
	if fc := sel.route.filters[sel.entry]; fc != nil && fc.unary != nil {
		return fc.unary(ctx, method, req, reply, cc, invoker, opts...)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (bd *binding) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cfg := bd.current(ctx, cc)
	if cfg == nil || !cfg.filters || cfg.err != nil {
		return streamer(ctx, desc, cc, method, opts...)
	}
	sel, err := cfg.selectRoute(method, ctx)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, selectionKey{}, &sel)
	if fc := sel.route.filters[sel.entry]; fc != nil && fc.stream != nil {
		return fc.stream(ctx, desc, cc, method, streamer, opts...)
	}
	return streamer(ctx, desc, cc, method, opts...)
}

// filterSet indexes filters by the type name Listeners name them by.
func filterSet(filters []Filter) (map[string]Filter, error) {
	out := make(map[string]Filter, len(filters))
	for i, f := range filters {
		name := registry.TypeName(f.TypeURL)
		switch {
		case name == "":
			return nil, fmt.Errorf("xdsgrpc: Filters[%d]: empty TypeURL", i)
		case f.Build == nil:
			return nil, fmt.Errorf("xdsgrpc: Filters[%d] (%s): nil Build", i, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("xdsgrpc: Filters[%d]: %s is registered twice", i, name)
		}
		out[name] = f
	}
	return out, nil
}
