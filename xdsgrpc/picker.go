package xdsgrpc

import (
	"context"
	"reflect"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// picker is the channel's picker: it routes each RPC (gRFC A28), then
// asks the picker of the cluster the route chose.
type picker struct {
	cfg      *channelConfig
	clusters []balancer.Picker // by index of cfg.clusters
}

// same reports whether o picks exactly as p does.
func (p *picker) same(o *picker) bool {
	if p.cfg != o.cfg || len(p.clusters) != len(o.clusters) {
		return false
	}
	for i := range p.clusters {
		if !samePicker(p.clusters[i], o.clusters[i]) {
			return false
		}
	}
	return true
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	cfg := p.cfg
	if cfg.err != nil {
		return balancer.PickResult{}, cfg.err
	}
	var sel selection
	if s, ok := info.Ctx.Value(selectionKey{}).(*selection); ok && s.cfg == cfg {
		// The interceptor routed the RPC before the program's filters
		// ran, as gRPC routes before its filters.
		sel = *s
	} else {
		var err error
		if sel, err = cfg.selectRoute(info.FullMethodName, info.Ctx); err != nil {
			return balancer.PickResult{}, err
		}
	}
	if sel.hash != "" {
		info.Ctx = metadata.AppendToOutgoingContext(info.Ctx, ringHashHeader, sel.hash)
	}
	return p.clusters[sel.cluster].Pick(info)
}

// samePicker reports whether a and b are the same picker. Pickers come
// from grpc-go's balancers and the program's own, and a picker that is
// a value of a type == cannot compare would make == panic: such pickers
// are taken as different.
func samePicker(a, b balancer.Picker) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if va := reflect.ValueOf(a); va.Kind() != reflect.Pointer && !va.Comparable() {
		return false
	}
	return a == b
}

// selection is where an RPC goes: the route and cluster, and the hash a
// ring_hash cluster needs.
type selection struct {
	cfg     *channelConfig
	route   *route
	entry   int // index into route.clusters
	cluster int // index into cfg.clusters
	hash    string
}

type selectionKey struct{}

var errNoRoute = status.Error(codes.Unavailable, "xds: no route matches the RPC")

// selectRoute finds the RPC's route, the first that matches, and its
// cluster.
func (c *channelConfig) selectRoute(method string, ctx context.Context) (selection, error) {
	var md metadata.MD
	mdRead := false
	for i := range c.routes {
		r := &c.routes[i]
		if !r.match(method, ctx, &md, &mdRead) {
			continue
		}
		if r.err != nil {
			// gRPC fails the RPCs a non-forwarding route takes with
			// UNAVAILABLE (gRFC A28, A36).
			return selection{}, status.Error(codes.Unavailable, "xds: "+r.err.Error())
		}
		entry := r.pick()
		sel := selection{cfg: c, route: r, entry: entry, cluster: r.clusters[entry]}
		if c.clusters[sel.cluster].needsHash {
			sel.hash = requestHash(r.hash, ctx, c.env.channelID)
		}
		return sel, nil
	}
	return selection{}, errNoRoute
}
