package graph

import (
	"slices"
	"sync"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/serial"
	"github.com/xdsengine/xdsengine/registry"
)

// Watcher receives the resolved dependency graph of a [Watch].
type Watcher interface {
	// OnGraphChanged delivers either a complete, consistent snapshot of
	// every resource reachable from the root (err nil), or an error naming
	// the resource that is missing, failed, or closes a cycle (g nil).
	// Calls are serialized; done works as for
	// [engine.ResourceWatcher]: the source's next read waits for it.
	OnGraphChanged(g *Graph, err error, done func())
}

// WatcherFunc adapts a function to a Watcher.
type WatcherFunc func(g *Graph, err error, done func())

// OnGraphChanged calls f.
func (f WatcherFunc) OnGraphChanged(g *Graph, err error, done func()) { f(g, err, done) }

// Watch watches root and, following the dependency extractor of each
// resource type in the source's registry, everything it depends on. It subscribes to new
// references and cancels the watches of resources no longer reachable as
// the resources change, and delivers a new Graph whenever any part of it
// changes, including its ambient errors. It knows no resource type by
// name. The returned cancel stops every watch; no callback starts after
// it returns.
func Watch(src engine.Source, root registry.Ref, w Watcher) (cancel func()) {
	gw := &graphWatch{
		src:   src,
		reg:   src.Registry(),
		root:  root,
		w:     w,
		nodes: make(map[registry.Ref]*graphNodeState),
		ser:   serial.New(),
	}
	if n, ok := src.(interface{ NodeID() string }); ok {
		gw.nodeID = n.NodeID()
	}
	gw.mu.Lock()
	start := gw.ensureLocked(root)
	gw.mu.Unlock()
	gw.startWatches(start)
	return gw.cancel
}

type graphWatch struct {
	src    engine.Source
	reg    *registry.Registry
	root   registry.Ref
	w      Watcher
	nodeID string
	ser    *serial.Serializer

	mu       sync.Mutex
	closed   bool
	nodes    map[registry.Ref]*graphNodeState
	pending  []func() // done callbacks of the source waiting on the next delivery
	lastSent *Graph   // to skip a delivery that changes nothing
	lastErr  string
}

type graphNodeState struct {
	cancel   func()
	resource registry.Resource
	err      error
	ambient  error
	deps     []registry.Ref
	known    bool // resource or err has arrived
}

// ensureLocked adds a node for ref if there is none and returns the
// watches to start. They are started by startWatches without the lock: a
// Source may call its watcher before Watch returns.
func (gw *graphWatch) ensureLocked(ref registry.Ref) []pendingWatch {
	if _, ok := gw.nodes[ref]; ok {
		return nil
	}
	st := &graphNodeState{}
	gw.nodes[ref] = st
	w := engine.WatcherFuncs{
		ResourceChanged: func(r registry.Resource, err error, done func()) {
			gw.update(ref, st, func() {
				if err != nil {
					st.resource, st.err, st.deps = nil, err, nil
				} else {
					st.resource, st.err = r, nil
					st.deps = gw.depsOf(ref, r)
				}
				st.ambient = nil
				st.known = true
			}, done)
		},
		AmbientError: func(err error, done func()) {
			gw.update(ref, st, func() { st.ambient = err }, done)
		},
	}
	return []pendingWatch{{ref, st, w}}
}

type pendingWatch struct {
	ref registry.Ref
	st  *graphNodeState
	w   engine.ResourceWatcher
}

// startWatches starts watches outside the lock and records their cancel
// functions; a node that left the graph meanwhile is cancelled at once.
func (gw *graphWatch) startWatches(pending []pendingWatch) {
	for _, p := range pending {
		cancel := gw.src.Watch(p.ref.TypeURL, p.ref.Name, p.w)
		gw.mu.Lock()
		live := !gw.closed && gw.nodes[p.ref] == p.st
		if live {
			p.st.cancel = cancel
		}
		gw.mu.Unlock()
		if !live {
			cancel()
		}
	}
}

func (gw *graphWatch) depsOf(ref registry.Ref, r registry.Resource) []registry.Ref {
	t, ok := gw.reg.Lookup(ref.TypeURL)
	if !ok {
		return nil
	}
	var out []registry.Ref
	for _, d := range t.Refs(r) {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// update applies one change from the source, re-resolves and delivers.
func (gw *graphWatch) update(ref registry.Ref, st *graphNodeState, apply func(), done func()) {
	gw.mu.Lock()
	if gw.closed || gw.nodes[ref] != st {
		gw.mu.Unlock()
		done()
		return
	}
	apply()
	gw.pending = append(gw.pending, done)
	reachable, cycle := gw.reachableLocked()
	var stale []func()
	for r, n := range gw.nodes {
		if _, ok := reachable[r]; !ok {
			if n.cancel != nil {
				stale = append(stale, n.cancel)
			}
			delete(gw.nodes, r)
		}
	}
	var start []pendingWatch
	for r := range reachable {
		start = append(start, gw.ensureLocked(r)...)
	}
	g, err := gw.resolveLocked(reachable, cycle)
	if g != nil && gw.sameAsLastLocked(g) || err != nil && err.Error() == gw.lastErr && gw.lastSent == nil {
		g, err = nil, nil // nothing new to show
	}
	// The source's done functions are held until the graph watcher is
	// done with the snapshot they produced. When there is nothing to show
	// (yet) they are released at once: holding them while the graph is
	// incomplete would stop the very stream that must bring the missing
	// resources.
	dones := gw.pending
	gw.pending = nil
	release := func() {
		for _, d := range dones {
			d()
		}
	}
	deliver := release
	if g != nil || err != nil {
		gw.lastSent = g
		gw.lastErr = ""
		if err != nil {
			gw.lastErr = err.Error()
		}
		deliver = func() {
			if gw.isClosed() {
				release()
				return
			}
			var once sync.Once
			gw.w.OnGraphChanged(g, err, func() { once.Do(release) })
		}
	}
	gw.mu.Unlock()
	for _, c := range stale {
		c()
	}
	gw.startWatches(start)
	if !gw.ser.Schedule(deliver) {
		release() // cancelled: nobody will see it, but the source must go on
	}
}

func (gw *graphWatch) cancel() {
	gw.mu.Lock()
	if gw.closed {
		gw.mu.Unlock()
		return
	}
	gw.closed = true
	var cancels []func()
	for _, n := range gw.nodes {
		if n.cancel != nil {
			cancels = append(cancels, n.cancel)
		}
	}
	gw.nodes = nil
	dones := gw.pending
	gw.pending = nil
	gw.mu.Unlock()
	for _, c := range cancels {
		c()
	}
	for _, d := range dones {
		d()
	}
	// Not close: cancel may run inside a graph callback, on the
	// serializer's own goroutine. Queued deliveries see closed and only
	// release their dones; the goroutine then ends.
	gw.ser.CloseAsync()
}

func (gw *graphWatch) isClosed() bool {
	gw.mu.Lock()
	defer gw.mu.Unlock()
	return gw.closed
}
