package graph_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
)

// shallowThing needs its dependencies but not theirs, as a gRPC server's
// Listener needs its RouteConfigurations and not their clusters.
type shallowThing struct{ *testtype.Resource }

func (shallowThing) ShallowDependencies() bool { return true }

var _ graph.Shallow = shallowThing{}

// TestWatchShallow checks that a Shallow resource's dependencies are
// watched and resolved, and theirs only when another path needs them.
func TestWatchShallow(t *testing.T) {
	unwrapping := func(rt registry.ResourceType) registry.ResourceType {
		inner := rt.Dependencies
		rt.Dependencies = registry.DependencyFunc(func(r registry.Resource) []registry.Ref {
			if s, ok := r.(shallowThing); ok {
				r = s.Resource
			}
			return inner.Dependencies(r)
		})
		return rt
	}
	reg := registry.MustNew(unwrapping(testtype.Type(required, true)), unwrapping(testtype.Type(thing, false)))
	// The resources: "shallow" is Shallow; "leaf" never arrives.
	deps := map[string][]any{
		"shallow": {dep(thing, "mid")},
		"mid":     {dep(thing, "leaf")},
	}
	var mu sync.Mutex
	var watched []string
	src := engine.NewSource(reg, func(typeURL, name string, w engine.ResourceWatcher) func() {
		mu.Lock()
		watched = append(watched, name)
		mu.Unlock()
		if name == "leaf" {
			return func() {}
		}
		var r registry.Resource = &testtype.Resource{Name: name, Fields: map[string]any{"deps": deps[name]}}
		if name == "shallow" {
			r = shallowThing{r.(*testtype.Resource)}
		}
		w.OnResourceChanged(r, nil, func() {})
		return func() {}
	})
	sawLeaf := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(watched, "leaf")
	}

	t.Run("dependencies of dependencies not followed", func(t *testing.T) {
		deps["root"] = []any{dep(thing, "shallow")}
		watched = nil
		r := newGraphRec()
		defer graph.Watch(src, registry.Ref{TypeURL: required, Name: "root"}, r)()
		g := r.nextGraph(t)
		if shape(g) != "root >shallow >>mid" || len(g.Nodes) != 3 || g.Node(registry.Ref{TypeURL: thing, Name: "mid"}).Deps != nil {
			t.Errorf("graph %q with %d nodes, want root >shallow >>mid, mid without deps", shape(g), len(g.Nodes))
		}
		if sawLeaf() {
			t.Error("leaf was watched, want it left alone")
		}
	})
	t.Run("followed when another path needs them", func(t *testing.T) {
		deps["root"] = []any{dep(thing, "shallow"), dep(thing, "mid")}
		watched = nil
		r := newGraphRec()
		defer graph.Watch(src, registry.Ref{TypeURL: required, Name: "root"}, r)()
		// Through root, mid's leaf is needed; it never arrives, so no
		// graph is delivered.
		r.expectNone(t)
		if !sawLeaf() {
			t.Error("leaf was not watched")
		}
	})
}
