package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// reachableLocked walks the known dependencies from the root and reports
// the first cycle found. A resource is in the map when reachable; its
// value says whether its own dependencies are followed, which they are
// not when every path to it ends in a [Shallow] resource.
func (gw *graphWatch) reachableLocked() (map[registry.Ref]bool, []registry.Ref) {
	reachable := map[registry.Ref]bool{}
	onStack := map[registry.Ref]bool{}
	var stack []registry.Ref
	var cycle []registry.Ref
	var visit func(r registry.Ref, follow bool)
	visit = func(r registry.Ref, follow bool) {
		if onStack[r] {
			if cycle == nil {
				i := slices.Index(stack, r)
				cycle = append(slices.Clone(stack[i:]), r)
			}
			return
		}
		if followed, seen := reachable[r]; seen && (followed || !follow) {
			return
		}
		reachable[r] = follow
		if !follow {
			return
		}
		onStack[r] = true
		stack = append(stack, r)
		if n := gw.nodes[r]; n != nil {
			leaves := isShallow(n.resource)
			for _, d := range n.deps {
				visit(d, !leaves)
			}
		}
		stack = stack[:len(stack)-1]
		onStack[r] = false
	}
	visit(gw.root, true)
	return reachable, cycle
}

func isShallow(r registry.Resource) bool {
	s, ok := r.(Shallow)
	return ok && s.ShallowDependencies()
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
			parts[i] = gw.reg.ShortName(r.TypeURL) + " " + r.Name
		}
		last := cycle[len(cycle)-1]
		return nil, &engine.Error{Kind: engine.KindDependency, Code: codes.FailedPrecondition, TypeURL: last.TypeURL, Name: last.Name,
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
		if !reachable[r] {
			return // its dependencies are not needed
		}
		for _, d := range n.deps {
			find(d)
		}
	}
	find(gw.root)
	if failErr != nil {
		return nil, gw.dependencyError(failed, failErr)
	}
	g := &Graph{Root: gw.root, Nodes: make(map[registry.Ref]*Node, len(reachable)), nodeID: gw.nodeID, reg: gw.reg}
	var build func(r registry.Ref) error
	build = func(r registry.Ref) error {
		if g.Nodes[r] != nil {
			return nil
		}
		n := gw.nodes[r]
		gn := &Node{Ref: r, Resource: n.resource, Decoded: n.resource, Ambient: n.ambient}
		if !reachable[r] {
			g.Nodes[r] = gn // reached only through a Shallow resource
			return nil
		}
		for _, d := range n.deps {
			if err := build(d); err != nil {
				return err
			}
		}
		gn.Deps = slices.Clone(n.deps)
		if c, ok := n.resource.(registry.Composer); ok {
			resolved, err := c.Compose(func(ref registry.Ref) (registry.Resource, bool) {
				dn := g.Nodes[ref]
				if dn == nil {
					return nil, false
				}
				return dn.Resource, true
			})
			if err != nil {
				return gw.dependencyError(r, err)
			}
			gn.Resource = resolved
		}
		g.Nodes[r] = gn
		return nil
	}
	if err := build(gw.root); err != nil {
		return nil, err
	}
	return g, nil
}

func (gw *graphWatch) dependencyError(r registry.Ref, cause error) *engine.Error {
	code := status.Code(cause)
	if code == codes.Unknown || code == codes.OK {
		code = codes.FailedPrecondition
	}
	var e *engine.Error
	if errors.As(cause, &e) && e.TypeURL == r.TypeURL && e.Name == r.Name {
		return &engine.Error{Kind: engine.KindDependency, Code: code, TypeURL: r.TypeURL, Name: r.Name, ServerURI: e.ServerURI, NodeID: gw.nodeID, Err: e.Err}
	}
	return &engine.Error{Kind: engine.KindDependency, Code: code, TypeURL: r.TypeURL, Name: r.Name, NodeID: gw.nodeID, Err: cause}
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
		if o == nil || o.Decoded != n.Decoded || !slices.Equal(o.Deps, n.Deps) || errString(o.Ambient) != errString(n.Ambient) {
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
