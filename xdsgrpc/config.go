package xdsgrpc

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/lrs"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// env is what a channel's configurations share: the builder's options
// and the channel's identity.
type env struct {
	clock     engine.Clock
	failover  time.Duration
	custom    map[string]balancer.Builder
	filters   map[string]Filter
	lrs       *lrs.Client // nil: no load is reported
	logger    *slog.Logger
	channelID uint64 // hashed by the io.grpc.channel_id hash policy (A42)
	target    string
}

// channelConfig is one complete, consistent configuration of a channel
// (gRFC A74): the routes of the virtual host the channel uses and every
// cluster they lead to, each with its endpoints or its error. The
// resolver makes one per graph and hands it to the balancer; it is never
// modified after.
type channelConfig struct {
	env *env
	// err, when set, fails every RPC: the Listener or the
	// RouteConfiguration failed (gRFC A88's resource error), or neither
	// leads to a virtual host for the channel.
	err      error
	routes   []route
	clusters []*clusterConfig
	// filters: some route runs HTTP filters of the program's own.
	filters bool
}

// clusterConfig is what one cluster of a channel routes by.
type clusterConfig struct {
	name string
	// err fails the RPCs routed to the cluster, and only those (A74):
	// the cluster does not exist, was rejected, or cannot be served.
	err error
	// cluster and cla identify what the config was built from, to tell
	// a config that changed from one that did not.
	cluster *cds.Cluster
	cla     *eds.ClusterLoadAssignment
	// note is gRFC A88's resolution note, for the message of RPCs that
	// find a priority without usable endpoints; "" when none is.
	note   string
	server bootstrap.ServerConfig
	policy policy
	// priorities: the endpoints by priority, then locality.
	priorities [][]localityConfig
	drops      []eds.DropOverload
	// edsErr: the endpoints could not be had; the cluster has one
	// priority with none (gRFC A37), whose picks fail with it.
	edsErr error
	// children are an aggregate cluster's leaf clusters, highest
	// priority first (gRFC A37, A75).
	children []*clusterConfig
	// needsHash: a ring_hash policy below wants each RPC's hash.
	needsHash bool
	// localityOf maps an endpoint address to its locality, for load
	// reports.
	localityOf map[string]lrs.Locality
}

func (c *clusterConfig) aggregate() bool {
	return c.cluster != nil && c.cluster.Kind == cds.KindAggregate
}

// sameAs reports whether c was built from the same resources as o, and
// so needs no update of the balancers.
func (c *clusterConfig) sameAs(o *clusterConfig) bool {
	if o == nil || c.cluster != o.cluster || c.cla != o.cla || errText(c.err) != errText(o.err) ||
		errText(c.edsErr) != errText(o.edsErr) || c.note != o.note || c.server.String() != o.server.String() ||
		len(c.children) != len(o.children) {
		return false
	}
	for i := range c.children {
		if !c.children[i].sameAs(o.children[i]) {
			return false
		}
	}
	return true
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// localityConfig is one locality of a priority.
type localityConfig struct {
	id        eds.LocalityID
	weight    uint32
	endpoints []resolver.Endpoint
}

// maxAggregateDepth is gRFC A37's limit on nested aggregate clusters.
const maxAggregateDepth = 16

// configBuilder turns a graph into a channelConfig.
type configBuilder struct {
	env       *env
	g         *graph.Graph
	view      *channelView
	authority string
	cfg       *channelConfig
	index     map[string]int
	leafMemo  map[string]*clusterConfig
}

// buildConfig makes the channel's configuration from a resolved graph
// rooted at its Listener.
func buildConfig(e *env, g *graph.Graph, view *channelView, authority string) *channelConfig {
	b := &configBuilder{env: e, g: g, view: view, authority: authority, cfg: &channelConfig{env: e},
		index: map[string]int{}, leafMemo: map[string]*clusterConfig{}}
	b.build()
	return b.cfg
}

func (b *configBuilder) build() {
	root := b.g.Node(b.g.Root)
	lis, ok := root.Resource.(*lds.Listener)
	if !ok || lis.IsServer() {
		b.cfg.err = status.Errorf(codes.Unavailable, "xds: Listener %q is not a client's API listener%s", b.g.Root.Name, b.nodeNote(b.g.Root))
		return
	}
	rc := lis.RouteConfig
	if rc == nil {
		ref := registry.Ref{TypeURL: rds.TypeURL, Name: lis.RouteConfigName}
		n := b.g.Node(ref)
		if n != nil {
			rc, _ = n.Resource.(*rds.RouteConfiguration)
		}
		if rc == nil {
			b.cfg.err = status.Errorf(codes.Unavailable, "xds: RouteConfiguration %q of Listener %q is missing%s", lis.RouteConfigName, lis.Name, b.nodeNote(b.g.Root))
			return
		}
	}
	vh := rc.FindVirtualHost(b.authority)
	if vh == nil {
		b.cfg.err = status.Errorf(codes.Unavailable, "xds: RouteConfiguration %q has no virtual host for authority %q%s", rc.Name, b.authority, b.nodeNote(b.g.Root))
		return
	}
	for i := range vh.Routes {
		r, err := compileRoute(&vh.Routes[i], i, b.clusterIndex)
		if err != nil {
			// The rds type validated these patterns: a failure here is a
			// registry whose types validate less, which fails the route.
			r = route{name: vh.Routes[i].Name, kind: rds.ActionUnsupported, err: err}
		}
		b.cfg.routes = append(b.cfg.routes, r)
	}
	for i, c := range b.cfg.clusters {
		b.cfg.clusters[i] = b.cluster(c.name)
	}
	b.filters(lis, rc, vh)
}

// nodeNote ends a message with gRFC A88's resolution note for ref.
func (b *configBuilder) nodeNote(ref registry.Ref) string {
	return " (" + b.g.ResolutionNote(ref) + ")"
}

// errorf is an error for the RPCs of a cluster, with gRFC A88's
// resolution note for ref (the ambient errors of the resources involved,
// or the node ID when there are none, unless the message has it). It is
// plain text on purpose: grpc-go fails an RPC at once, wait-for-ready or
// not, on a picker error that carries a status, and turns a control
// plane's code into INTERNAL (gRFC A54); a cluster that cannot be used is
// a TRANSIENT_FAILURE, which wait-for-ready RPCs wait out.
func (b *configBuilder) errorf(ref registry.Ref, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	note := b.g.ResolutionNote(ref)
	if !strings.HasPrefix(note, "xDS node ID: ") || !strings.Contains(msg, "node ID") {
		msg += " (" + note + ")"
	}
	return errors.New(msg)
}

func (b *configBuilder) clusterIndex(name string) int {
	if i, ok := b.index[name]; ok {
		return i
	}
	b.index[name] = len(b.cfg.clusters)
	b.cfg.clusters = append(b.cfg.clusters, &clusterConfig{name: name})
	return b.index[name]
}

func cdsRef(name string) registry.Ref { return registry.Ref{TypeURL: cds.TypeURL, Name: name} }

// cluster builds the config of a cluster a route names.
func (b *configBuilder) cluster(name string) *clusterConfig {
	ref := cdsRef(name)
	n := b.g.Node(ref)
	if n == nil {
		return &clusterConfig{name: name, err: b.errorf(b.g.Root, "cluster %q is not in the configuration", name)}
	}
	if f, ok := n.Resource.(*failed); ok {
		return &clusterConfig{name: name, err: b.errorf(ref, "cluster %q: %v", name, f.err)}
	}
	c, ok := n.Resource.(*cds.Cluster)
	if !ok {
		return &clusterConfig{name: name, err: b.errorf(ref, "cluster %q is a %T, not a Cluster", name, n.Resource)}
	}
	if c.Kind != cds.KindAggregate {
		return b.leaf(c)
	}
	// gRFC A75: a priority over the leaf clusters, each with its own
	// policy, circuit breaking and drops; the aggregate's own policy is
	// ignored. Clusters that are missing or failed are skipped (A74).
	out := &clusterConfig{name: name, cluster: c}
	var skipped []string
	var walk func(name string, depth int, path []string) error
	seen := map[string]bool{}
	walk = func(name string, depth int, path []string) error {
		if depth > maxAggregateDepth {
			return b.errorf(ref, "aggregate cluster %q: more than %d levels of aggregate clusters (%s)", out.name, maxAggregateDepth, strings.Join(path, " -> "))
		}
		n := b.g.Node(cdsRef(name))
		if n == nil {
			skipped = append(skipped, name+": not in the configuration")
			return nil
		}
		switch r := n.Resource.(type) {
		case *failed:
			skipped = append(skipped, name+": "+r.err.Error())
		case *cds.Cluster:
			if r.Kind == cds.KindAggregate {
				for _, child := range r.AggregateClusters {
					if err := walk(child, depth+1, append(path, child)); err != nil {
						return err
					}
				}
				return nil
			}
			if !seen[name] {
				seen[name] = true
				out.children = append(out.children, b.leaf(r))
			}
		}
		return nil
	}
	if err := walk(name, 0, []string{name}); err != nil {
		return &clusterConfig{name: name, cluster: c, err: err}
	}
	if len(out.children) == 0 {
		out.err = b.errorf(ref, "aggregate cluster %q has no cluster to send to (%s)", name, strings.Join(skipped, "; "))
		return out
	}
	for _, ch := range out.children {
		out.needsHash = out.needsHash || ch.needsHash
	}
	return out
}

// leaf builds the config of an EDS (or LOGICAL_DNS) cluster.
func (b *configBuilder) leaf(c *cds.Cluster) *clusterConfig {
	if m := b.leafMemo[c.Name]; m != nil {
		return m
	}
	ref := cdsRef(c.Name)
	out := &clusterConfig{name: c.Name, cluster: c}
	b.leafMemo[c.Name] = out
	switch {
	case c.Kind == cds.KindLogicalDNS:
		out.err = b.errorf(ref, "cluster %q is LOGICAL_DNS, which this resolver does not resolve", c.Name)
		return out
	case c.TLS != nil:
		// grpc-go's xDS credentials take the cluster's TLS settings from
		// attributes only its own balancers can set: sending in the clear
		// instead would be worse than not sending.
		out.err = b.errorf(ref, "cluster %q asks for TLS (gRFC A29), which this resolver does not configure", c.Name)
		return out
	}
	pol, err := resolvePolicy(c.LBPolicy, b.env.custom)
	if err != nil {
		out.err = b.errorf(ref, "cluster %q: %v", c.Name, err)
		return out
	}
	out.policy = pol
	out.needsHash = pol.ringHash
	if c.LoadReporting && b.view != nil {
		out.server = b.view.server(c.Name)
	}
	edsRef := registry.Ref{TypeURL: eds.TypeURL, Name: c.EDSName()}
	n := b.g.Node(edsRef)
	var cla *eds.ClusterLoadAssignment
	if n != nil {
		switch r := n.Resource.(type) {
		case *eds.ClusterLoadAssignment:
			cla = r
		case *failed:
			out.edsErr = b.errorf(edsRef, "endpoints %q: %v", edsRef.Name, r.err)
		}
	}
	if cla == nil {
		if out.edsErr == nil {
			out.edsErr = b.errorf(edsRef, "endpoints %q are not in the configuration", edsRef.Name)
		}
		out.priorities = [][]localityConfig{nil}
		return out
	}
	out.cla = cla
	out.drops = cla.Drops
	out.priorities, out.localityOf = endpointsOf(cla, pol.ringHash)
	// The note walks the graph: made only for the clusters that may need
	// it, so that a configuration of many clusters is not quadratic.
	for _, p := range out.priorities {
		for _, l := range p {
			if len(l.endpoints) == 0 {
				out.note = b.g.ResolutionNote(ref)
			}
		}
		if len(p) == 0 {
			out.note = b.g.ResolutionNote(ref)
		}
	}
	return out
}

// failingConfig is the configuration of a channel whose Listener or
// RouteConfiguration failed: every RPC fails with err.
func failingConfig(e *env, err error) *channelConfig {
	return &channelConfig{env: e, err: rpcError(err)}
}

// rpcError is the status an RPC fails with for err. grpc-go turns a
// picker's status whose code gRFC A54 reserves for the control plane
// (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, ...) into INTERNAL,
// so those become UNAVAILABLE here, as gRPC's own resolver reports them;
// the message names the code the engine gave.
func rpcError(err error) error {
	code := status.Code(err)
	switch code {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.FailedPrecondition,
		codes.Aborted, codes.OutOfRange, codes.DataLoss, codes.OK, codes.Unknown:
		return status.Errorf(codes.Unavailable, "xds: %s: %v", code, err)
	}
	return status.Error(code, "xds: "+err.Error())
}
