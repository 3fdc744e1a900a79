package graph_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/xdstest"
)

// graphRec records graph deliveries.
type graphRec struct{ ch chan graphEvent }

type graphEvent struct {
	g   *graph.Graph
	err error
}

func newGraphRec() *graphRec { return &graphRec{ch: make(chan graphEvent, 100)} }

func (r *graphRec) OnGraphChanged(g *graph.Graph, err error, done func()) {
	done()
	r.ch <- graphEvent{g, err}
}

func (r *graphRec) next(t *testing.T) graphEvent {
	t.Helper()
	select {
	case ev := <-r.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no graph delivery within 10s")
	}
	return graphEvent{}
}

func (r *graphRec) nextGraph(t *testing.T) *graph.Graph {
	t.Helper()
	ev := r.next(t)
	if ev.err != nil {
		t.Fatalf("graph error %v, want a graph", ev.err)
	}
	return ev.g
}

// shape renders a graph as "name(dep,dep) ..." in walk order.
func shape(g *graph.Graph) string {
	var parts []string
	g.Walk(func(depth int, n *graph.Node) {
		parts = append(parts, strings.Repeat(">", depth)+n.Ref.Name)
	})
	return strings.Join(parts, " ")
}

func dep(typeURL, name string) string { return typeURL + "|" + name }

func graphFixture(t *testing.T, mutate func(*engine.Config)) (*xdstest.Server, *engine.Engine) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	return srv, realClockEngine(t, srv.Addr(), mutate)
}

func TestWatchGraph(t *testing.T) {
	root := registry.Ref{TypeURL: required, Name: "root"}
	t.Run("resolves, follows changes, unsubscribes", func(t *testing.T) {
		srv, e := graphFixture(t, nil)
		srv.Set(
			xdstest.R("root", testtype.Message("root", "deps", []any{dep(thing, "mid"), dep(thing, "side")})).As(required),
			xdstest.R("mid", testtype.Message("mid", "deps", []any{dep(thing, "leaf")})).As(thing),
			xdstest.R("side", testtype.Message("side")).As(thing),
			xdstest.R("leaf", testtype.Message("leaf")).As(thing),
			xdstest.R("other", testtype.Message("other")).As(thing),
		)
		r := newGraphRec()
		cancel := graph.Watch(e, root, r)
		defer cancel()
		g := r.nextGraph(t)
		if got, want := shape(g), "root >mid >>leaf >side"; got != want {
			t.Fatalf("graph %q, want %q", got, want)
		}
		if note := g.ResolutionNote(registry.Ref{TypeURL: thing, Name: "leaf"}); note != "xDS node ID: "+nodeID {
			t.Fatalf("note = %q, want the node ID", note)
		}
		// Re-point the root: mid and leaf leave the graph and are
		// unsubscribed on the wire.
		srv.Set(
			xdstest.R("root", testtype.Message("root", "deps", []any{dep(thing, "other"), dep(thing, "side")})).As(required),
			xdstest.R("mid", testtype.Message("mid", "deps", []any{dep(thing, "leaf")})).As(thing),
			xdstest.R("side", testtype.Message("side")).As(thing),
			xdstest.R("leaf", testtype.Message("leaf")).As(thing),
			xdstest.R("other", testtype.Message("other")).As(thing),
		)
		g = r.nextGraph(t)
		if got, want := shape(g), "root >other >side"; got != want {
			t.Fatalf("graph %q, want %q", got, want)
		}
		ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		if _, err := srv.WaitForRequest(ctx, func(req *discoverypb.DiscoveryRequest) bool {
			return req.GetTypeUrl() == thing && slices.Equal(req.GetResourceNames(), []string{"other", "side"})
		}); err != nil {
			t.Fatalf("no request unsubscribing mid and leaf: %v", err)
		}
	})
	t.Run("ambient error lands in the branch's resolution note", func(t *testing.T) {
		srv, e := graphFixture(t, nil)
		srv.Set(
			xdstest.R("root", testtype.Message("root", "deps", []any{dep(thing, "a"), dep(thing, "b")})).As(required),
			xdstest.R("a", testtype.Message("a")).As(thing),
			xdstest.R("b", testtype.Message("b")).As(thing),
		)
		r := newGraphRec()
		defer graph.Watch(e, root, r)()
		r.nextGraph(t)
		srv.Update(thing, xdstest.R("a", testtype.Message("a", "invalid", "no endpoints")).As(thing), xdstest.R("b", testtype.Message("b")).As(thing))
		g := r.nextGraph(t)
		if shape(g) != "root >a >b" {
			t.Fatalf("graph %q: the last good tree must stay", shape(g))
		}
		noteA := g.ResolutionNote(registry.Ref{TypeURL: thing, Name: "a"})
		noteB := g.ResolutionNote(registry.Ref{TypeURL: thing, Name: "b"})
		if !strings.Contains(noteA, "no endpoints") || strings.Contains(noteB, "no endpoints") {
			t.Fatalf("notes a=%q b=%q: the NACK belongs to a's branch only", noteA, noteB)
		}
	})
	t.Run("missing resource is named", func(t *testing.T) {
		srv, e := graphFixture(t, func(c *engine.Config) { c.ResourceTimeout = 100 * time.Millisecond })
		srv.Set(xdstest.R("root", testtype.Message("root", "deps", []any{dep(thing, "ghost")})).As(required))
		r := newGraphRec()
		defer graph.Watch(e, root, r)()
		ev := r.next(t)
		var ee *engine.Error
		if ev.err == nil || status.Code(ev.err) != codes.NotFound || !asError(ev.err, &ee) || ee.Name != "ghost" || ee.Kind != engine.KindDependency {
			t.Fatalf("got %v / %v, want NOT_FOUND naming ghost", ev.g, ev.err)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		srv, e := graphFixture(t, nil)
		srv.Set(
			xdstest.R("root", testtype.Message("root", "deps", []any{dep(thing, "x")})).As(required),
			xdstest.R("x", testtype.Message("x", "deps", []any{dep(thing, "y")})).As(thing),
			xdstest.R("y", testtype.Message("y", "deps", []any{dep(thing, "x")})).As(thing),
		)
		r := newGraphRec()
		defer graph.Watch(e, root, r)()
		ev := r.next(t)
		if ev.err == nil || status.Code(ev.err) != codes.FailedPrecondition || !strings.Contains(ev.err.Error(), "cycle: Thing x -> Thing y -> Thing x") {
			t.Fatalf("got %v, want a cycle error", ev.err)
		}
	})
	t.Run("composer folds dependencies in", func(t *testing.T) {
		srv, e := graphFixture(t, func(c *engine.Config) { c.Registry = composingRegistry() })
		srv.Set(
			xdstest.R("root", testtype.Message("root", "deps", []any{dep(thing, "p"), dep(thing, "q")})).As(required),
			xdstest.R("p", testtype.Message("p")).As(thing),
			xdstest.R("q", testtype.Message("q")).As(thing),
		)
		r := newGraphRec()
		defer graph.Watch(e, root, r)()
		g := r.nextGraph(t)
		if got := g.Node(root).Resource.(composed); got != "root[p,q]" {
			t.Fatalf("resolved root = %v, want root[p,q]", got)
		}
		if _, ok := g.Node(root).Decoded.(*composite); !ok {
			t.Fatalf("Decoded must stay as decoded, got %T", g.Node(root).Decoded)
		}
	})
}

func asError(err error, target **engine.Error) bool {
	e, ok := err.(*engine.Error)
	*target = e
	return ok
}

// composite is a test resource that implements registry.Composer.
type composite struct{ *testtype.Resource }

type composed string

func (c *composite) Compose(lookup func(registry.Ref) (registry.Resource, bool)) (registry.Resource, error) {
	var names []string
	for _, d := range c.Fields["deps"].([]any) {
		typeURL, name, _ := strings.Cut(d.(string), "|")
		r, ok := lookup(registry.Ref{TypeURL: typeURL, Name: name})
		if !ok {
			return nil, status.Errorf(codes.Internal, "missing %s", name)
		}
		names = append(names, r.(*testtype.Resource).Name)
	}
	return composed(c.Name + "[" + strings.Join(names, ",") + "]"), nil
}

func composingRegistry() *registry.Registry {
	rt := testtype.Type(required, true)
	inner := rt.Decoder
	rt.Decoder = registry.DecoderFunc(func(raw []byte, o registry.DecodeOptions) (registry.DecodeResult, error) {
		r, err := inner.Decode(raw, o)
		if err == nil {
			r.Resource = &composite{r.Resource.(*testtype.Resource)}
		}
		return r, err
	})
	innerV, innerD := rt.Validator, rt.Dependencies
	rt.Validator = registry.ValidatorFunc(func(r registry.Resource, o registry.DecodeOptions) error {
		return innerV.Validate(r.(*composite).Resource, o)
	})
	rt.Dependencies = registry.DependencyFunc(func(r registry.Resource) []registry.Ref {
		return innerD.Dependencies(r.(*composite).Resource)
	})
	return registry.MustNew(rt, testtype.Type(thing, false))
}

// TestWatchGraphSynchronousSource: a Source may call its watcher before
// Watch returns (a Mux with no route does); the graph must not deadlock.
func TestWatchGraphSynchronousSource(t *testing.T) {
	r := newGraphRec()
	mux := &engine.Mux{Types: testtype.Registry(), Route: func(string, string) engine.Source { return nil }}
	cancel := graph.Watch(mux, registry.Ref{TypeURL: required, Name: "root"}, r)
	ev := r.next(t)
	if status.Code(ev.err) != codes.FailedPrecondition || !strings.Contains(ev.err.Error(), "no source routes") {
		t.Fatalf("got %v, want the Mux's unroutable error", ev.err)
	}
	cancel()

	// A synchronous source that resolves a two-level graph inside Watch.
	src := engine.NewSource(testtype.Registry(), func(typeURL, name string, w engine.ResourceWatcher) func() {
		var kv []any
		if name == "root" {
			kv = []any{"deps", []any{dep(thing, "leaf")}}
		}
		w.OnResourceChanged(&testtype.Resource{Name: name, Fields: map[string]any{"deps": depsOf(kv)}}, nil, func() {})
		return func() {}
	})
	cancel = graph.Watch(src, registry.Ref{TypeURL: required, Name: "root"}, r)
	defer cancel()
	if g := r.nextGraph(t); shape(g) != "root >leaf" {
		t.Fatalf("graph %q", shape(g))
	}
}

func depsOf(kv []any) any {
	if len(kv) == 2 {
		return kv[1]
	}
	return nil
}

const (
	thing    = testtype.TypeURL
	required = testtype.RequiredTypeURL
	nodeID   = "test-node"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// realClockEngine is an engine on the real clock with short retries.
func realClockEngine(t *testing.T, addr string, mutate func(*engine.Config)) *engine.Engine {
	t.Helper()
	cfg := engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: nodeID}},
		Registry:  testtype.Registry(),
		Transport: transport.GRPC(xdstest.FastReconnect),
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Switches:  &features.Switches{},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// expectNone checks that nothing is delivered for a short while.
func (r *graphRec) expectNone(t *testing.T) {
	t.Helper()
	select {
	case ev := <-r.ch:
		t.Errorf("got a delivery %v / %v, want none", ev.g, ev.err)
	case <-time.After(100 * time.Millisecond):
	}
}
