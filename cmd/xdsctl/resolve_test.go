package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/xdstest"
)

const collectionZ2 = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpointCollection/svc-1/z2"

// chain serves Listener → RouteConfiguration → Cluster →
// ClusterLoadAssignment → LbEndpointCollection, the route pointing at
// cluster.
func chain(cluster string) []xdstest.Resource {
	return []xdstest.Resource{
		xdstest.R("listener.example", xdstest.Listener("listener.example", "route-1")),
		xdstest.R("route-1", xdstest.RouteConfig("route-1", cluster)),
		xdstest.R("c1", xdstest.Cluster("c1", "eds-1")),
		xdstest.R("eds-1", xdstest.ClusterLoadAssignment("eds-1",
			xdstest.Locality{Zone: "z1", Endpoints: []string{"10.0.0.1:80"}},
			xdstest.Locality{Zone: "z2", Collection: collectionZ2})),
		xdstest.Wrapped(collectionZ2, xdstest.Collection("10.0.1.1:80", "[::1]:81")),
	}
}

// TestResolve prints the tree and nothing else: with no ambient error
// there is no resolution note worth printing.
func TestResolve(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(chain("c1")...)
	bs := writeBootstrap(t, srv.Addr())

	r := runSync(t, "resolve", "--bootstrap", bs, "--timeout", "10s", "listener.example")
	if r.code != exitOK {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	want := `Listener listener.example: RDS route-1
└─ RouteConfiguration route-1: all [*]: 1 route → c1
   └─ Cluster c1: EDS eds-1, xds_wrr_locality_experimental(round_robin)
      └─ ClusterLoadAssignment eds-1: region/z1 p0 w1: 10.0.0.1:80 | region/z2 p0 w1 (LEDS): 10.0.1.1:80 [::1]:81
         └─ LbEndpointCollection ` + collectionZ2 + `: 2 endpoints: 10.0.1.1:80 [::1]:81
`
	if r.stdout != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if r.stderr != "" {
		t.Errorf("stderr not empty:\n%s", r.stderr)
	}
	t.Logf("resolve output:\n%s", r.stdout)
}

// TestResolveNotesAmbientErrors: when the tree resolves with an ambient
// error on a branch (here a newer version of the cluster was NACKed while
// an endpoint collection was still awaited), the resolution notes name it
// for that cluster only.
func TestResolveNotesAmbientErrors(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	// c2 shares the route's listener but not the branch of c1's bad
	// update; the collection of eds-1 is held back.
	route := xdstest.RouteConfig("route-1", "c1")
	route.VirtualHosts[0].Routes = append(route.VirtualHosts[0].Routes, xdstest.RouteConfig("route-1", "c2").VirtualHosts[0].Routes[0])
	route.VirtualHosts[0].Routes[0].Match = &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/one"}}
	goodC1 := xdstest.R("c1", xdstest.Cluster("c1", "eds-1"))
	c2 := xdstest.R("c2", xdstest.Cluster("c2", "eds-2"))
	srv.Set(
		xdstest.R("listener.example", xdstest.Listener("listener.example", "route-1")),
		xdstest.R("route-1", route),
		goodC1, c2,
		xdstest.R("eds-1", xdstest.ClusterLoadAssignment("eds-1", xdstest.Locality{Zone: "z2", Collection: collectionZ2})),
		xdstest.R("eds-2", xdstest.ClusterLoadAssignment("eds-2", xdstest.Locality{Zone: "z1", Endpoints: []string{"10.0.0.2:80"}})),
	)
	bs := writeBootstrap(t, srv.Addr())

	done := make(chan result, 1)
	go func() { done <- runSync(t, "resolve", "--bootstrap", bs, "--timeout", "20s", "listener.example") }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := srv.WaitForRequest(ctx, func(r *discoverypb.DiscoveryRequest) bool {
		return r.GetTypeUrl() == leds.TypeURL && slices.Contains(r.GetResourceNames(), collectionZ2)
	}); err != nil {
		t.Fatalf("the collection was never asked for: %v", err)
	}
	badC1 := xdstest.Cluster("c1", "eds-1")
	badC1.ClusterDiscoveryType = &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC}
	srv.Update(cds.TypeURL, xdstest.R("c1", badC1), c2)
	if _, err := srv.WaitForRequest(ctx, func(r *discoverypb.DiscoveryRequest) bool {
		return r.GetTypeUrl() == cds.TypeURL && r.GetErrorDetail() != nil
	}); err != nil {
		t.Fatalf("the bad cluster was not NACKed: %v", err)
	}
	srv.Update(leds.TypeURL, xdstest.Wrapped(collectionZ2, xdstest.Collection("10.0.1.1:80")))

	r := <-done
	if r.code != exitOK {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	tree, notes, ok := strings.Cut(r.stdout, "\nResolution notes:\n")
	if !ok || !strings.Contains(tree, "Cluster c1: EDS eds-1") {
		t.Fatalf("stdout has no tree with the last good c1 and notes:\n%s", r.stdout)
	}
	want := `  Cluster c1: Cluster resource "c1": invalid resource: type: discovery type STATIC is not supported`
	if lines := strings.Split(strings.TrimSuffix(notes, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("notes:\n%s\nwant one line, for c1, starting %q", notes, want)
	}
	t.Logf("stdout:\n%s", r.stdout)
}

// TestResolveMissingCluster fails naming the cluster the route points at
// and the server does not have.
func TestResolveMissingCluster(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	srv.Set(chain("c-missing")...)
	bs := writeBootstrap(t, srv.Addr())

	r := runSync(t, "resolve", "--bootstrap", bs, "--timeout", "10s", "--resource-timeout", "300ms", "listener.example")
	if r.code != exitFailure {
		t.Fatalf("exit status %d, want 1; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`xdsctl resolve: listener "listener.example" did not resolve: NOT_FOUND: Cluster resource "c-missing"`,
		`Cluster "c-missing" version="" state=DOES_NOT_EXIST`,
		`RouteConfiguration "route-1" version="1" state=ACKED`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not contain %q:\n%s", want, r.stderr)
		}
	}
	if r.stdout != "" {
		t.Errorf("stdout not empty:\n%s", r.stdout)
	}
	t.Logf("stderr:\n%s", r.stderr)
}

// TestResolveTimeout gives up when the tree is incomplete at --timeout and
// says what it was still waiting for.
func TestResolveTimeout(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	// No RouteConfiguration: RDS responses just leave it out, so it stays
	// awaited until the 15 s does-not-exist timer.
	srv.Set(xdstest.R("listener.example", xdstest.Listener("listener.example", "route-1")))
	bs := writeBootstrap(t, srv.Addr())

	r := runSync(t, "resolve", "--bootstrap", bs, "--timeout", "300ms", "listener.example")
	if r.code != exitFailure {
		t.Fatalf("exit status %d, want 1; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`timed out after 300ms waiting for listener "listener.example" to resolve; still awaited: RouteConfiguration "route-1"`,
		`Listener "listener.example" version="1" state=ACKED`,
		`RouteConfiguration "route-1" version="" state=REQUESTED`,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not contain %q:\n%s", want, r.stderr)
		}
	}
	t.Logf("stderr:\n%s", r.stderr)
}

// TestResolveUnreachable keeps trying while the server cannot be reached,
// and at --timeout reports the last error.
func TestResolveUnreachable(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	bs := writeBootstrap(t, srv.Addr())
	srv.Stop()

	start := time.Now()
	r := runSync(t, "resolve", "--bootstrap", bs, "--timeout", "1500ms", "listener.example")
	if r.code != exitFailure || !strings.Contains(r.stderr, "timed out after 1.5s waiting for listener") ||
		!strings.Contains(r.stderr, `the last error: UNAVAILABLE: Listener resource "listener.example"`) {
		t.Fatalf("exit status %d, want 1, a timeout and the last UNAVAILABLE error; stderr:\n%s", r.code, r.stderr)
	}
	if waited := time.Since(start); waited < 1500*time.Millisecond {
		t.Errorf("gave up after %v, before --timeout", waited)
	}
}

// TestResolveServerStartsLate: a server that comes up after resolve
// started is waited for, within --timeout.
func TestResolveServerStartsLate(t *testing.T) {
	srv := xdstest.NewServer(t, xdstest.Options{})
	bs := writeBootstrap(t, srv.Addr())
	srv.Stop()
	srv.Set(chain("c1")...)

	done := make(chan result, 1)
	go func() { done <- runSync(t, "resolve", "--bootstrap", bs, "--timeout", "30s", "listener.example") }()
	// Let the first attempt fail with UNAVAILABLE before the server is up.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for srv.Counts().ConnectionsRefused == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	srv.Restart()
	r := <-done
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "Listener listener.example: RDS route-1") {
		t.Fatalf("exit status %d, want 0 and the tree; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
