package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// Graph is an immutable snapshot of a resolved dependency graph.
type Graph struct {
	// Root is the resource the graph was watched from.
	Root registry.Ref
	// Nodes holds every resource reachable from Root.
	Nodes  map[registry.Ref]*Node
	nodeID string
	reg    *registry.Registry
}

// Node is one resource of a Graph.
type Node struct {
	Ref registry.Ref
	// Resource is the resource to use: when its type composes
	// ([registry.Composer]), the decoded resource with its dependencies
	// folded in (an EDS resource with the endpoints of its LEDS
	// collections), else the decoded resource itself.
	Resource registry.Resource
	// Decoded is the resource exactly as the server sent it, decoded and
	// validated, before any composition. It is Resource for types that do
	// not compose.
	Decoded registry.Resource
	// Deps are the resource's dependencies, in the order its type gave.
	Deps []registry.Ref
	// Ambient is the resource's own ambient error (gRFC A88), or nil.
	Ambient error
}

// Shallow is implemented by resources that need their dependencies but
// not what those depend on: a gRPC server's Listener (package lds) needs
// its RouteConfigurations, and never the clusters their routes name,
// which a server does not use (gRFC A36). [Watch] follows such a
// resource's dependencies one level: a resource reached only through it
// is watched, but its own dependencies are not; its [Node] has no Deps
// and is not composed.
type Shallow interface {
	ShallowDependencies() bool
}

// Node returns the node of ref, or nil.
func (g *Graph) Node(ref registry.Ref) *Node { return g.Nodes[ref] }

// Walk visits the graph depth first from the root, each dependency in
// order; a node reached twice (a shared dependency) is visited each time.
func (g *Graph) Walk(visit func(depth int, n *Node)) {
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
// type, its name and, when its Resource implements fmt.Stringer, a
// summary; a resource's ambient error follows on a line of its own. An
// outage of a server, which every resource from that server shares, is
// shown once, under the first resource it affects.
func (g *Graph) String() string {
	var b strings.Builder
	shown := map[string]bool{}
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
		fmt.Fprintf(&b, "%s%s%s %s", prefix, branch, g.reg.ShortName(ref.TypeURL), ref.Name)
		if s, ok := n.Resource.(fmt.Stringer); ok {
			b.WriteString(": " + s.String())
		}
		b.WriteByte('\n')
		if note := ambientNote(n.Ambient); note != "" && !shown[note] {
			shown[note] = true
			fmt.Fprintf(&b, "%s%s  ! %s\n", prefix, childPrefix, note)
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
	g.Walk(func(_ int, n *Node) {
		if !related[n.Ref] || n.Ambient == nil {
			return
		}
		note := ambientNote(n.Ambient)
		if !slices.Contains(notes, note) {
			notes = append(notes, note)
		}
	})
	if len(notes) == 0 {
		return "xDS node ID: " + g.nodeID
	}
	return strings.Join(notes, "; ")
}

// ambientNote is how an ambient error is shown: a server's outage without
// the name of the resource it was reported for, since it is every
// resource's from that server; "" for none.
func ambientNote(err error) string {
	if err == nil {
		return ""
	}
	var e *engine.Error
	if errors.As(err, &e) && e.Kind == engine.KindConnectivity {
		server := *e
		server.TypeURL, server.Name = "", ""
		return server.Error()
	}
	return err.Error()
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
