package xdsgrpc

import (
	"sync"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// channelView is the Source one channel's graph watch runs over: the
// program's Source, seen as a channel needs it (gRFC A74).
//
//   - A RouteConfiguration leads only to the clusters of the virtual host
//     the channel's authority selects, so a broken cluster of another
//     virtual host cannot touch the channel, and none is watched for
//     nothing.
//   - Below the RouteConfiguration an error is a value, not a failure: a
//     Cluster, its endpoints or their LEDS collections that do not exist
//     or were rejected arrive in the graph as a *failed resource. graph.Watch
//     fails the whole graph for a failed resource; A74 fails only the RPCs
//     routed to that cluster, and skips the missing children of an
//     aggregate cluster.
//   - The server each Cluster came from is kept, for load reporting to
//     "self" (package lrs).
type channelView struct {
	src       engine.Source
	reg       *registry.Registry
	authority string

	mu      sync.Mutex
	servers map[string]bootstrap.ServerConfig
}

func newChannelView(src engine.Source, authority string) (*channelView, error) {
	v := &channelView{src: src, authority: authority, servers: map[string]bootstrap.ServerConfig{}}
	base := src.Registry()
	var types []registry.ResourceType
	for _, url := range base.TypeURLs() {
		t, _ := base.Lookup(url)
		orig := t
		switch url {
		case lds.TypeURL:
			t.Dependencies = registry.DependencyFunc(v.listenerDeps)
		case rds.TypeURL:
			t.Dependencies = registry.DependencyFunc(v.routeDeps)
		default:
			t.Dependencies = registry.DependencyFunc(func(r registry.Resource) []registry.Ref {
				switch r := r.(type) {
				case *failed:
					return nil
				case *composingEDS:
					return orig.Refs(r.cla)
				}
				return orig.Refs(r)
			})
		}
		types = append(types, t)
	}
	reg, err := registry.New(types...)
	if err != nil {
		return nil, err
	}
	v.reg = reg
	return v, nil
}

func (v *channelView) Registry() *registry.Registry { return v.reg }

// NodeID lets graph.Watch end its messages with the node ID, as it does
// over the source itself.
func (v *channelView) NodeID() string {
	if n, ok := v.src.(interface{ NodeID() string }); ok {
		return n.NodeID()
	}
	return ""
}

func (v *channelView) listenerDeps(r registry.Resource) []registry.Ref {
	l, ok := r.(*lds.Listener)
	if !ok || l.IsServer() {
		return nil
	}
	if l.RouteConfig != nil {
		return v.clusterRefs(l.RouteConfig)
	}
	if l.RouteConfigName != "" {
		return []registry.Ref{{TypeURL: rds.TypeURL, Name: l.RouteConfigName}}
	}
	return nil
}

func (v *channelView) routeDeps(r registry.Resource) []registry.Ref {
	rc, ok := r.(*rds.RouteConfiguration)
	if !ok {
		return nil
	}
	return v.clusterRefs(rc)
}

func (v *channelView) clusterRefs(rc *rds.RouteConfiguration) []registry.Ref {
	var out []registry.Ref
	for _, name := range clustersOf(rc.FindVirtualHost(v.authority)) {
		out = append(out, cdsRef(name))
	}
	return out
}

func (v *channelView) server(cluster string) bootstrap.ServerConfig {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.servers[cluster]
}

func (v *channelView) Watch(typeURL, name string, w engine.ResourceWatcher) (cancel func()) {
	vw := &viewWatcher{v: v, ref: registry.Ref{TypeURL: typeURL, Name: name}, w: w,
		isolate: typeURL != lds.TypeURL && typeURL != rds.TypeURL}
	return v.src.Watch(typeURL, name, vw)
}

// failed stands in the graph for a resource below the route
// configuration that failed, so that the failure stays with the clusters
// that use it.
type failed struct {
	ref registry.Ref
	err error
}

// viewWatcher is the view's watcher of one resource.
type viewWatcher struct {
	v       *channelView
	ref     registry.Ref
	w       engine.ResourceWatcher
	isolate bool
}

// OnUpdate keeps the server a Cluster came from; the engine calls it in
// place of OnResourceChanged.
func (vw *viewWatcher) OnUpdate(u engine.Update, done func()) {
	if u.Err == nil && vw.ref.TypeURL == cds.TypeURL {
		vw.v.mu.Lock()
		vw.v.servers[vw.ref.Name] = u.Server
		vw.v.mu.Unlock()
	}
	vw.OnResourceChanged(u.Resource, u.Err, done)
}

func (vw *viewWatcher) OnResourceChanged(r registry.Resource, err error, done func()) {
	if err != nil && vw.isolate {
		r, err = &failed{ref: vw.ref, err: err}, nil
	} else if cla, ok := r.(*eds.ClusterLoadAssignment); ok && len(cla.LEDSCollections()) > 0 {
		r = &composingEDS{ref: vw.ref, cla: cla}
	}
	vw.w.OnResourceChanged(r, err, done)
}

func (vw *viewWatcher) OnAmbientError(err error, done func()) { vw.w.OnAmbientError(err, done) }

// composingEDS is an EDS resource with LEDS collections whose composition
// turns a failed collection into a failed resource, not a failed graph.
type composingEDS struct {
	ref registry.Ref
	cla *eds.ClusterLoadAssignment
}

func (c *composingEDS) Compose(lookup func(registry.Ref) (registry.Resource, bool)) (registry.Resource, error) {
	var bad *failed
	res, err := c.cla.Compose(func(ref registry.Ref) (registry.Resource, bool) {
		r, ok := lookup(ref)
		if f, isFailed := r.(*failed); isFailed {
			if bad == nil {
				bad = f
			}
			return nil, false
		}
		return r, ok
	})
	switch {
	case bad != nil:
		return &failed{ref: c.ref, err: bad.err}, nil
	case err != nil:
		return &failed{ref: c.ref, err: err}, nil
	}
	return res, nil
}
