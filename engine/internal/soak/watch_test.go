package soak_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/types/rds"
)

// protoer is what every built-in resource is: its message, as sent.
type protoer interface{ Proto() proto.Message }

// checker watches the watcher contract for one engine, across all its
// watchers: resource callbacks never overlap (nor those of one graph);
// every error is an *engine.Error with a non-OK code, about the watched
// resource; exactly one of resource and error is set, and the resource is
// the watched one; nothing is called after Close, nor after a cancel made
// inside a callback; a resource in use is taken back by an error only if
// it is a data error from the server with fail_on_data_errors, and an
// ambient error comes only while a resource is in use (A88).
// Violations are collected and reported at the end of each round, since
// they happen on the engine's goroutines.
type checker struct {
	running atomic.Int32 // resource watcher callbacks running now
	calls   atomic.Int64
	closed  atomic.Bool // the engine was closed: no callback may start

	// Counts for the report.
	resources atomic.Int64 // OnResourceChanged with a resource
	graphs    atomic.Int64 // graph snapshots
	drops     atomic.Int64 // resources in use taken back (fail_on_data_errors)
	// Held dones: a few watchers call done late, from another goroutine,
	// so that flow control is exercised while other streams go on.
	heldDones sync.WaitGroup
	// dropServer is the URI of the server with fail_on_data_errors: its
	// data errors may take a resource back from a watcher.
	dropServer string

	mu         sync.Mutex
	violations []string
	errs       map[string]int // "kind code" of errors seen
}

func newChecker() *checker { return &checker{errs: make(map[string]int)} }

func (c *checker) violate(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.violations) < 50 {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

// enter and exit bracket every resource watcher callback: the engine runs
// them one at a time, on one goroutine (engine.ResourceWatcher).
func (c *checker) enter(what string) {
	if c.closed.Load() {
		c.violate("%s: callback after Close returned", what)
	}
	if n := c.running.Add(1); n != 1 {
		c.violate("%s: %d resource watcher callbacks running at once", what, n)
	}
}

func (c *checker) exit() { c.running.Add(-1) }

// checkErr checks one error a watcher was given.
func (c *checker) checkErr(what string, err error) {
	e, ok := err.(*engine.Error)
	if !ok {
		c.violate("%s: error %T is not an *engine.Error: %v", what, err, err)
		return
	}
	code := status.Code(err)
	if code == codes.OK || e.Code == codes.OK {
		c.violate("%s: error with code OK: %v", what, err)
	}
	switch e.Kind {
	case engine.KindUnknown, engine.KindInvalidName, engine.KindUnknownAuthority, engine.KindUnknownType,
		engine.KindUnroutable, engine.KindClosed:
		// Every name, type and authority of the soak is valid, and
		// watches end before the engine closes.
		c.violate("%s: unexpected error of kind %v: %v", what, e.Kind, err)
	}
	if !strings.Contains(err.Error(), "node ID: ") {
		c.violate("%s: error without the node ID: %v", what, err)
	}
	c.mu.Lock()
	c.errs[e.Kind.String()+" "+code.String()]++
	c.mu.Unlock()
}

// done calls done now or, for one callback in sixteen, a little later
// from another goroutine.
func (c *checker) done(done func()) {
	n := c.calls.Add(1)
	if n%16 != 0 {
		done()
		return
	}
	c.heldDones.Go(func() {
		time.Sleep(time.Duration(n%20+1) * time.Millisecond)
		done()
	})
}

func (c *checker) errorCounts() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for k, n := range c.errs {
		parts = append(parts, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// resWatch is one watch of one resource, through its type's typed Watch.
// It keeps what the watcher was last told.
type resWatch struct {
	ref registry.Ref
	c   *checker
	// replace, when set, is called from the watcher's next callback, on
	// the engine's callback goroutine, to cancel it and start its
	// successor there; after that no callback of the watcher may run
	// (stopped), which is certain only for a cancel made inside a
	// callback: one made from elsewhere may race with a callback that
	// is just starting.
	replace atomic.Pointer[func(*resWatch)]
	stopped atomic.Bool

	mu      sync.Mutex
	last    protoer // the resource in use, nil after an error
	lastErr error   // the error of the last OnResourceChanged, if any
	ambient error
	updates int
	cancel  func()
	// inUse: the last OnResourceChanged delivered a resource, which the
	// watcher uses. Callbacks are serialized, so only they touch it.
	inUse bool
}

func (w *resWatch) String() string {
	return kindNames[kindOf(w.ref.TypeURL)] + " " + w.ref.Name
}

func (w *resWatch) changed(r protoer, isNil bool, err error, done func()) {
	w.c.enter(w.String())
	defer w.c.exit()
	defer w.maybeReplace()
	if w.stopped.Load() {
		w.c.violate("%s: OnResourceChanged after the watch was cancelled", w)
	}
	switch {
	case err == nil && isNil:
		w.c.violate("%s: OnResourceChanged with neither resource nor error", w)
	case err != nil && !isNil:
		w.c.violate("%s: OnResourceChanged with both resource and error %v", w, err)
	case err != nil:
		w.c.checkErr(w.String()+" OnResourceChanged", err)
		w.checkErrRef(err)
		if e, ok := err.(*engine.Error); ok && w.inUse {
			if e.Class() == features.DataError && e.ServerURI == w.c.dropServer {
				w.c.drops.Add(1)
			} else {
				// A88: an error stops the use of a resource only if it
				// is a data error from a server whose features say so
				// (fail_on_data_errors: the fallback); otherwise it is
				// ambient.
				w.c.violate("%s: OnResourceChanged error while a resource is in use: %v", w, err)
			}
		}
		w.inUse = false
	default:
		w.inUse = true
		w.c.resources.Add(1)
		if n := nameOf(r); n != w.ref.Name {
			w.c.violate("%s: got resource %q", w, n)
		}
	}
	w.mu.Lock()
	if err != nil {
		w.last, w.lastErr = nil, err
	} else {
		w.last, w.lastErr = r, nil
	}
	// A new resource, or an error that invalidates it, replaces any
	// ambient condition (engine.ResourceWatcher).
	w.ambient = nil
	w.updates++
	w.mu.Unlock()
	w.c.done(done)
}

func (w *resWatch) ambientErr(err error, done func()) {
	w.c.enter(w.String())
	defer w.c.exit()
	defer w.maybeReplace()
	if w.stopped.Load() {
		w.c.violate("%s: OnAmbientError after the watch was cancelled", w)
	}
	if err != nil {
		w.c.checkErr(w.String()+" OnAmbientError", err)
		w.checkErrRef(err)
	}
	if !w.inUse {
		// An ambient error says: keep using the resource you have.
		w.c.violate("%s: OnAmbientError(%v) with no resource in use", w, err)
	}
	w.mu.Lock()
	w.ambient = err
	w.mu.Unlock()
	w.c.done(done)
}

// maybeReplace runs a replacement asked for by the churn.
func (w *resWatch) maybeReplace() {
	if f := w.replace.Swap(nil); f != nil {
		(*f)(w)
	}
}

// checkErrRef checks that an error a resource watcher gets is about its
// resource.
func (w *resWatch) checkErrRef(err error) {
	if e, ok := err.(*engine.Error); ok && (e.TypeURL != w.ref.TypeURL || e.Name != w.ref.Name) {
		w.c.violate("%s: error about %s %q: %v", w, e.TypeURL, e.Name, err)
	}
}

// nameOf returns a built-in resource's name.
func nameOf(r protoer) string {
	switch r := r.(type) {
	case *lds.Listener:
		return r.Name
	case *rds.RouteConfiguration:
		return r.Name
	case *cds.Cluster:
		return r.Name
	case *eds.ClusterLoadAssignment:
		return r.ClusterName
	case *leds.LbEndpointCollection:
		return r.Name
	}
	return fmt.Sprintf("(a %T)", r)
}

// typed adapts a resWatch to a type's typed watcher.
type typed[T protoer] struct{ w *resWatch }

func (t typed[T]) OnResourceChanged(r T, err error, done func()) {
	var zero T
	t.w.changed(r, any(r) == any(zero), err, done)
}

func (t typed[T]) OnAmbientError(err error, done func()) { t.w.ambientErr(err, done) }

// start watches w.ref on src with the ref's own package's typed Watch.
func (w *resWatch) start(src engine.Source) {
	var cancel func()
	switch w.ref.TypeURL {
	case lds.TypeURL:
		cancel = lds.Watch(src, w.ref.Name, typed[*lds.Listener]{w})
	case rds.TypeURL:
		cancel = rds.Watch(src, w.ref.Name, typed[*rds.RouteConfiguration]{w})
	case cds.TypeURL:
		cancel = cds.Watch(src, w.ref.Name, typed[*cds.Cluster]{w})
	case eds.TypeURL:
		cancel = eds.Watch(src, w.ref.Name, typed[*eds.ClusterLoadAssignment]{w})
	case leds.TypeURL:
		cancel = leds.Watch(src, w.ref.Name, typed[*leds.LbEndpointCollection]{w})
	default:
		panic("soak: no typed watch for " + w.ref.TypeURL)
	}
	w.mu.Lock()
	w.cancel = cancel
	w.mu.Unlock()
}

func (w *resWatch) stop() {
	w.mu.Lock()
	cancel := w.cancel
	w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// converged reports whether the watcher's state is want, and if not, why.
func (w *resWatch) converged(want proto.Message) (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.lastErr != nil:
		return false, fmt.Sprintf("%s: last told error %v", w, w.lastErr)
	case w.last == nil:
		return false, fmt.Sprintf("%s: no resource after %d updates", w, w.updates)
	case w.ambient != nil:
		return false, fmt.Sprintf("%s: ambient error %v", w, w.ambient)
	case !proto.Equal(w.last.Proto(), want):
		return false, fmt.Sprintf("%s: stale resource %s", w, describe(w.last.Proto()))
	}
	return true, ""
}

// graphWatch is one graph.Watch from a listener.
type graphWatch struct {
	root    registry.Ref
	c       *checker
	running atomic.Int32
	// replace and stopped work as for resWatch.
	replace atomic.Pointer[func(*graphWatch)]
	stopped atomic.Bool

	mu      sync.Mutex
	last    *graph.Graph
	lastErr error
	updates int
	cancel  func()
}

func (g *graphWatch) OnGraphChanged(gr *graph.Graph, err error, done func()) {
	what := "graph " + g.root.Name
	if g.c.closed.Load() {
		g.c.violate("%s: callback after Close returned", what)
	}
	// Graph callbacks run on the graph's own goroutine, serialized per
	// graph (graph.Watcher), not with the engine's.
	if n := g.running.Add(1); n != 1 {
		g.c.violate("%s: %d callbacks running at once", what, n)
	}
	defer g.running.Add(-1)
	if g.stopped.Load() {
		g.c.violate("%s: callback after the watch was cancelled", what)
	}
	defer func() {
		if f := g.replace.Swap(nil); f != nil {
			(*f)(g)
		}
	}()
	switch {
	case (gr == nil) == (err == nil):
		g.c.violate("%s: OnGraphChanged with graph %v and error %v", what, gr != nil, err)
	case err != nil:
		g.c.checkErr(what, err)
	default:
		g.c.graphs.Add(1)
	}
	g.mu.Lock()
	g.last, g.lastErr = gr, err
	g.updates++
	g.mu.Unlock()
	g.c.done(done)
}

func (g *graphWatch) stop() {
	g.mu.Lock()
	cancel := g.cancel
	g.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// converged reports whether the last graph holds exactly refs, each as in
// want, with no ambient error, and if not, why.
func (g *graphWatch) converged(refs []registry.Ref, want map[registry.Ref]proto.Message) (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	what := "graph " + g.root.Name
	switch {
	case g.lastErr != nil:
		return false, fmt.Sprintf("%s: last told error %v", what, g.lastErr)
	case g.last == nil:
		return false, fmt.Sprintf("%s: no graph after %d updates", what, g.updates)
	case len(g.last.Nodes) != len(refs):
		return false, fmt.Sprintf("%s: %d resources, want %d:\n%s", what, len(g.last.Nodes), len(refs), g.last)
	}
	for _, ref := range refs {
		n := g.last.Node(ref)
		if n == nil {
			return false, fmt.Sprintf("%s: lacks %s:\n%s", what, ref.Name, g.last)
		}
		if n.Ambient != nil {
			return false, fmt.Sprintf("%s: %s has ambient error %v", what, ref.Name, n.Ambient)
		}
		p, ok := n.Decoded.(protoer)
		if !ok || !proto.Equal(p.Proto(), want[ref]) {
			return false, fmt.Sprintf("%s: stale %s: %v", what, ref.Name, n.Decoded)
		}
	}
	return true, ""
}

// describe summarizes a resource for a failure message: the field that
// tells its generation, or the whole message when short.
func describe(m proto.Message) string {
	s := fmt.Sprint(m)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
