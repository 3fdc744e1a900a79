package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/lds"
)

const resolveUsage = `Usage: xdsctl resolve [--bootstrap FILE] [--timeout 10s] [--v] LISTENER

Resolves the Listener LISTENER the way a gRPC client does, following its
route configuration, clusters, endpoints and LEDS collections, and prints
the resolved tree once:

  Listener listener.example.com: RDS route-1
  └─ RouteConfiguration route-1: all [*]: 1 route → cluster-a
     └─ Cluster cluster-a: EDS eds-a, round_robin
        └─ ClusterLoadAssignment eds-a: region/zone-1 p0 w1: 10.0.0.1:80

When a resource of the tree has an ambient error (a newer version was
rejected, or its server cannot be reached), the tree holds the last good
version and "Resolution notes:" follow, one line per cluster whose branch
has such errors, naming them (gRFC A88).

While the server cannot be reached (UNAVAILABLE: not up yet, or
restarting) resolve keeps trying until --timeout. If a resource in the
tree fails (it does not exist, or was rejected with no earlier version to
use), or the tree is still incomplete when --timeout passes, it prints
what failed or what was still awaited, the last error, and the client's
cache state, to stderr and exits with status 1.

Flags:
  --bootstrap FILE        gRPC xDS bootstrap file; default $GRPC_XDS_BOOTSTRAP,
                          else the JSON in $GRPC_XDS_BOOTSTRAP_CONFIG
  --timeout DUR           give up after DUR (default 10s)
  --v                     log the xDS engine's debug logs to stderr
  --resource-timeout DUR  (advanced) does-not-exist timer; default 15s, so a
                          missing resource shows as still awaited before
                          the default --timeout passes

Examples:
  xdsctl resolve --bootstrap bootstrap.json listener.example.com
  xdsctl resolve --timeout 30s --resource-timeout 5s listener.example.com

Exit status: 0 resolved, 1 failed or timed out, 2 usage error.
`

type graphEvent struct {
	g   *graph.Graph
	err error
}

func runResolve(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(c.name)
	var ef engineFlags
	ef.register(fs)
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	pos, code, done := parseCommandLine(c, fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		return fail(c, stderr, usageErrorf("want exactly one LISTENER, got %d argument(s)", len(pos)))
	}
	if *timeout <= 0 {
		return fail(c, stderr, usageErrorf("--timeout must be positive"))
	}
	listener := pos[0]
	e, reg, err := ef.newEngine(listener, stderr)
	if err != nil {
		return fail(c, stderr, err)
	}
	defer e.Close()

	events, cancel := watchGraph(e, registry.Ref{TypeURL: lds.TypeURL, Name: listener})
	defer cancel()
	g, err := awaitGraph(ctx, events, *timeout)
	if err != nil {
		// The dump is taken while the watches still stand.
		cc := e.Dump()
		var te *timeoutError
		if errors.As(err, &te) {
			msg := fmt.Sprintf("timed out after %v waiting for listener %q to resolve; %s", te.after, listener, awaited(reg, cc))
			if te.last != nil {
				msg += "; the last error: " + errorLine(te.last)
			}
			return fail(c, stderr, fmt.Errorf("%s\n%s", msg, cacheState(reg, cc)))
		}
		return fail(c, stderr, fmt.Errorf("listener %q did not resolve: %w\n%s", listener, err, cacheState(reg, cc)))
	}
	if _, err := io.WriteString(stdout, g.String()+resolutionNotes(reg, g)); err != nil {
		return fail(c, stderr, err)
	}
	return exitOK
}

// resolutionNotes lists the resolution note (gRFC A88) of each cluster
// whose branch has ambient errors: the tree printed holds the last good
// versions there, and the notes say why nothing newer is in use. It is ""
// when no resource has an ambient error, the usual case.
func resolutionNotes(reg *registry.Registry, g *graph.Graph) string {
	ambient := false
	var clusters []registry.Ref
	g.Walk(func(_ int, n *graph.Node) {
		ambient = ambient || n.Ambient != nil
		if n.Ref.TypeURL == cds.TypeURL && !slices.Contains(clusters, n.Ref) {
			clusters = append(clusters, n.Ref)
		}
	})
	if !ambient {
		return ""
	}
	// A branch without ambient errors has the note of a branch with no
	// resources at all (the xDS node ID); it says nothing worth a line.
	clean := g.ResolutionNote(registry.Ref{})
	var b strings.Builder
	for _, r := range clusters {
		if note := g.ResolutionNote(r); note != clean {
			fmt.Fprintf(&b, "  %s %s: %s\n", reg.ShortName(r.TypeURL), r.Name, note)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "\nResolution notes:\n" + b.String()
}

// watchGraph watches root's graph, keeping only the newest event: a
// stale one is of no use.
func watchGraph(src engine.Source, root registry.Ref) (<-chan graphEvent, func()) {
	events := make(chan graphEvent, 1)
	cancel := graph.Watch(src, root, graph.WatcherFunc(func(g *graph.Graph, err error, done func()) {
		select {
		case <-events:
		default:
		}
		events <- graphEvent{g, err}
		done()
	}))
	return events, cancel
}

// timeoutError is a wait that ran out; last is the last UNAVAILABLE
// error seen meanwhile, if any.
type timeoutError struct {
	after time.Duration
	last  error
}

func (e *timeoutError) Error() string { return fmt.Sprintf("timed out after %v", e.after) }

// awaitGraph waits for a graph to resolve. An UNAVAILABLE error (the
// server cannot be reached yet) is not final: the engine retries, and so
// does the wait, until timeout. Other errors are final.
func awaitGraph(ctx context.Context, events <-chan graphEvent, timeout time.Duration) (*graph.Graph, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var last error
	for {
		select {
		case ev := <-events:
			switch {
			case ev.err == nil:
				return ev.g, nil
			case status.Code(ev.err) != codes.Unavailable:
				return nil, errors.New(errorLine(ev.err))
			}
			last = ev.err
		case <-timer.C:
			return nil, &timeoutError{after: timeout, last: last}
		case <-ctx.Done():
			return nil, fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
}

// awaited names the resources the client has asked for and heard
// nothing about.
func awaited(reg *registry.Registry, cc *statuspb.ClientConfig) string {
	var names []string
	for _, g := range sortedConfigs(cc) {
		if g.GetClientStatus() == adminpb.ClientResourceStatus_REQUESTED {
			names = append(names, fmt.Sprintf("%s %q", reg.ShortName(g.GetTypeUrl()), g.GetName()))
		}
	}
	if len(names) == 0 {
		return "no resource was still awaited"
	}
	return "still awaited: " + strings.Join(names, ", ")
}

// cacheState lists every resource of the client's CSDS view, one a
// line, with its state and last error.
func cacheState(reg *registry.Registry, cc *statuspb.ClientConfig) string {
	var b strings.Builder
	b.WriteString("client cache:")
	if len(cc.GetGenericXdsConfigs()) == 0 {
		b.WriteString(" empty")
	}
	for _, g := range sortedConfigs(cc) {
		fmt.Fprintf(&b, "\n  %s %q %s", reg.ShortName(g.GetTypeUrl()), g.GetName(), stateSummary(g))
		if d := g.GetErrorState().GetDetails(); d != "" {
			fmt.Fprintf(&b, "\n    error: %s", d)
		}
	}
	return b.String()
}

// sortedConfigs returns the resources of a CSDS view in dependency order
// (Listener first), then by name.
func sortedConfigs(cc *statuspb.ClientConfig) []*statuspb.ClientConfig_GenericXdsConfig {
	configs := slices.Clone(cc.GetGenericXdsConfigs())
	slices.SortStableFunc(configs, func(x, y *statuspb.ClientConfig_GenericXdsConfig) int {
		return cmp.Or(cmp.Compare(typeRank(x.GetTypeUrl()), typeRank(y.GetTypeUrl())), strings.Compare(x.GetName(), y.GetName()))
	})
	return configs
}

// typeRank orders the built-in types by dependency, Listener first;
// other types come last.
func typeRank(typeURL string) int {
	for i, t := range resourceTypes {
		if t.typeURL == typeURL {
			return i
		}
	}
	return len(resourceTypes)
}
