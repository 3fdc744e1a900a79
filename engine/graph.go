package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/internal/serial"
	"github.com/xdsengine/xdsengine/registry"
)

// GraphWatcher receives the resolved dependency graph of a WatchGraph.
type GraphWatcher interface {
	// OnGraphChanged delivers either a complete, consistent snapshot of
	// every resource reachable from the root (err nil), or an error naming
	// the resource that is missing, failed, or closes a cycle (g nil).
	// Calls are serialized; done works as for ResourceWatcher.
	OnGraphChanged(g *Graph, err error, done func())
}

// GraphWatcherFunc adapts a function to a GraphWatcher.
type GraphWatcherFunc func(g *Graph, err error, done func())

// OnGraphChanged calls f.
func (f GraphWatcherFunc) OnGraphChanged(g *Graph, err error, done func()) { f(g, err, done) }

// Graph is an immutable snapshot of a resolved dependency graph.
type Graph struct {
	// Root is the resource the graph was watched from.
	Root registry.Ref
	// Nodes holds every resource reachable from Root.
	Nodes  map[registry.Ref]*GraphNode
	nodeID string
}

// GraphNode is one resource of a Graph.
type GraphNode struct {
	Ref registry.Ref
	// Resource is the resource as decoded.
	Resource registry.Resource
	// Resolved is Resource with its dependencies folded in when the
	// resource is a [registry.Composer] (an EDS resource with its LEDS
	// endpoints), else Resource itself.
	Resolved registry.Resource
	// Deps are the resource's dependencies, in the order its type gave.
	Deps []registry.Ref
	// Ambient is the resource's own ambient error (gRFC A88), or nil.
	Ambient error
}

// Node returns the node of ref, or nil.
func (g *Graph) Node(ref registry.Ref) *GraphNode { return g.Nodes[ref] }

// Walk visits the graph depth first from the root, each dependency in
// order; a node reached twice (a shared dependency) is visited each time.
func (g *Graph) Walk(visit func(depth int, n *GraphNode)) {
	var walk func(ref registry.Ref, depth int)
	walk = func(ref registry.Ref, depth int) {
		n := g.Nodes[ref]
		if n == nil {
			return
		}
		visit(depth, n)
		for _, d := range n.Deps {
			walk(d, depth+1)
		}
	}
	walk(g.Root, 0)
}

// String renders the graph as an indented tree, one resource a line: its
// type, its name and, when its resolved form implements fmt.Stringer, a
// summary; a resource's ambient error follows on a line of its own.
func (g *Graph) String() string {
	var b strings.Builder
	var walk func(ref registry.Ref, prefix string, last, top bool)
	walk = func(ref registry.Ref, prefix string, last, top bool) {
		n := g.Nodes[ref]
		if n == nil {
			return
		}
		branch, childPrefix := "", ""
		if !top {
			branch, childPrefix = "├─ ", "│  "
			if last {
				branch, childPrefix = "└─ ", "   "
			}
		}
		fmt.Fprintf(&b, "%s%s%s %s", prefix, branch, shortTypeName(ref.TypeURL), ref.Name)
		if s, ok := n.Resolved.(fmt.Stringer); ok {
			b.WriteString(": " + s.String())
		}
		b.WriteByte('\n')
		if n.Ambient != nil {
			fmt.Fprintf(&b, "%s%s  ! %v\n", prefix, childPrefix, n.Ambient)
		}
		for i, d := range n.Deps {
			walk(d, prefix+childPrefix, i == len(n.Deps)-1, false)
		}
	}
	walk(g.Root, "", true, true)
	return b.String()
}

// ResolutionNote is the note gRFC A88 asks for on each branch: the ambient
// errors of every resource the branch of ref depends on and that depends
// on it — for a cluster, the listener, the route configuration and the
// cluster's own CDS, EDS and LEDS resources — or, when there are none, the
// xDS node ID, which helps whoever debugs a failure.
func (g *Graph) ResolutionNote(ref registry.Ref) string {
	related := map[registry.Ref]bool{}
	var down func(r registry.Ref)
	down = func(r registry.Ref) {
		if related[r] || g.Nodes[r] == nil {
			return
		}
		related[r] = true
		for _, d := range g.Nodes[r].Deps {
			down(d)
		}
	}
	down(ref)
	// Ancestors: every node with a path to ref.
	for changed := true; changed; {
		changed = false
		for r, n := range g.Nodes {
			if related[r] {
				continue
			}
			for _, d := range n.Deps {
				if d == ref || (related[d] && g.reaches(d, ref)) {
					related[r] = true
					changed = true
					break
				}
			}
		}
	}
	// One resource's outage is every resource's on that server: each
	// distinct cause is noted once, a server's without a resource name.
	var notes []string
	g.Walk(func(_ int, n *GraphNode) {
		if !related[n.Ref] || n.Ambient == nil {
			return
		}
		note := n.Ambient.Error()
		var e *Error
		if errors.As(n.Ambient, &e) && e.Kind == KindConnectivity {
			server := *e
			server.TypeURL, server.Name = "", ""
			note = server.Error()
		}
		if !slices.Contains(notes, note) {
			notes = append(notes, note)
		}
	})
	if len(notes) == 0 {
		return "xDS node ID: " + g.nodeID
	}
	return strings.Join(notes, "; ")
}

func (g *Graph) reaches(from, to registry.Ref) bool {
	seen := map[registry.Ref]bool{}
	var visit func(r registry.Ref) bool
	visit = func(r registry.Ref) bool {
		if r == to {
			return true
		}
		if seen[r] || g.Nodes[r] == nil {
			return false
		}
		seen[r] = true
		for _, d := range g.Nodes[r].Deps {
			if visit(d) {
				return true
			}
		}
		return false
	}
	return visit(from)
}

// WatchGraph watches root and, following each resource type's dependency
// extractor in reg, everything it depends on. It subscribes to new
// references and cancels the watches of resources no longer reachable as
// the resources change, and delivers a new Graph whenever any part of it
// changes, including its ambient errors. It knows no resource type by
// name. The returned cancel stops every watch; no callback starts after
// it returns.
func WatchGraph(src Source, reg *registry.Registry, root registry.Ref, w GraphWatcher) (cancel func()) {
	gw := &graphWatch{
		src:   src,
		reg:   reg,
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
	src    Source
	reg    *registry.Registry
	root   registry.Ref
	w      GraphWatcher
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
	w := WatcherFuncs{
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
	w   ResourceWatcher
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
		if !reachable[r] {
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

// reachableLocked walks the known dependencies from the root and reports
// the first cycle found.
func (gw *graphWatch) reachableLocked() (map[registry.Ref]bool, []registry.Ref) {
	reachable := map[registry.Ref]bool{}
	onStack := map[registry.Ref]bool{}
	var stack []registry.Ref
	var cycle []registry.Ref
	var visit func(r registry.Ref)
	visit = func(r registry.Ref) {
		if onStack[r] {
			if cycle == nil {
				i := slices.Index(stack, r)
				cycle = append(slices.Clone(stack[i:]), r)
			}
			return
		}
		if reachable[r] {
			return
		}
		reachable[r] = true
		onStack[r] = true
		stack = append(stack, r)
		if n := gw.nodes[r]; n != nil {
			for _, d := range n.deps {
				visit(d)
			}
		}
		stack = stack[:len(stack)-1]
		onStack[r] = false
	}
	visit(gw.root)
	return reachable, cycle
}

func (gw *graphWatch) readyLocked(reachable map[registry.Ref]bool) bool {
	for r := range reachable {
		if n := gw.nodes[r]; n == nil || !n.known {
			return false
		}
	}
	return true
}

// resolveLocked builds the snapshot once every reachable resource is
// known, or the error that prevents it. It returns nil, nil while some
// resource is still awaited.
func (gw *graphWatch) resolveLocked(reachable map[registry.Ref]bool, cycle []registry.Ref) (*Graph, error) {
	if !gw.readyLocked(reachable) {
		return nil, nil
	}
	if cycle != nil {
		parts := make([]string, len(cycle))
		for i, r := range cycle {
			parts[i] = shortTypeName(r.TypeURL) + " " + r.Name
		}
		last := cycle[len(cycle)-1]
		return nil, &Error{Kind: KindDependency, Code: codes.FailedPrecondition, TypeURL: last.TypeURL, Name: last.Name,
			NodeID: gw.nodeID, Err: fmt.Errorf("dependency cycle: %s", strings.Join(parts, " -> "))}
	}
	// Report a failed resource in a stable order: depth first from the root.
	var failed registry.Ref
	var failErr error
	seen := map[registry.Ref]bool{}
	var find func(r registry.Ref)
	find = func(r registry.Ref) {
		if failErr != nil || seen[r] {
			return
		}
		seen[r] = true
		n := gw.nodes[r]
		if n.err != nil {
			failed, failErr = r, n.err
			return
		}
		for _, d := range n.deps {
			find(d)
		}
	}
	find(gw.root)
	if failErr != nil {
		return nil, gw.dependencyError(failed, failErr)
	}
	g := &Graph{Root: gw.root, Nodes: make(map[registry.Ref]*GraphNode, len(reachable)), nodeID: gw.nodeID}
	var build func(r registry.Ref) error
	build = func(r registry.Ref) error {
		if g.Nodes[r] != nil {
			return nil
		}
		n := gw.nodes[r]
		for _, d := range n.deps {
			if err := build(d); err != nil {
				return err
			}
		}
		gn := &GraphNode{Ref: r, Resource: n.resource, Resolved: n.resource, Deps: slices.Clone(n.deps), Ambient: n.ambient}
		if c, ok := n.resource.(registry.Composer); ok {
			resolved, err := c.Compose(func(ref registry.Ref) (registry.Resource, bool) {
				dn := g.Nodes[ref]
				if dn == nil {
					return nil, false
				}
				return dn.Resolved, true
			})
			if err != nil {
				return gw.dependencyError(r, err)
			}
			gn.Resolved = resolved
		}
		g.Nodes[r] = gn
		return nil
	}
	if err := build(gw.root); err != nil {
		return nil, err
	}
	return g, nil
}

func (gw *graphWatch) dependencyError(r registry.Ref, cause error) *Error {
	code := status.Code(cause)
	if code == codes.Unknown || code == codes.OK {
		code = codes.FailedPrecondition
	}
	var e *Error
	if errors.As(cause, &e) && e.TypeURL == r.TypeURL && e.Name == r.Name {
		return &Error{Kind: KindDependency, Code: code, TypeURL: r.TypeURL, Name: r.Name, ServerURI: e.ServerURI, NodeID: gw.nodeID, Err: e.Err}
	}
	return &Error{Kind: KindDependency, Code: code, TypeURL: r.TypeURL, Name: r.Name, NodeID: gw.nodeID, Err: cause}
}

// sameAsLastLocked reports whether g shows exactly what the last delivered
// graph showed: same resources (by identity), dependencies and ambient
// errors.
func (gw *graphWatch) sameAsLastLocked(g *Graph) bool {
	last := gw.lastSent
	if last == nil || len(last.Nodes) != len(g.Nodes) {
		return false
	}
	for r, n := range g.Nodes {
		o := last.Nodes[r]
		if o == nil || o.Resource != n.Resource || !slices.Equal(o.Deps, n.Deps) || errString(o.Ambient) != errString(n.Ambient) {
			return false
		}
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
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
