package xdsgrpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/rds"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

// rpcError makes one RPC that must fail and returns its error.
func rpcError(t *testing.T, cc *grpc.ClientConn, method string, opts ...grpc.CallOption) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := call(ctx, cc, method)
	if err == nil {
		t.Fatalf("RPC %s succeeded, want an error", method)
	}
	return err
}

// waitForError waits until RPCs fail with code and a message holding
// text.
func waitForError(t *testing.T, cc *grpc.ClientConn, code codes.Code, text string) error {
	t.Helper()
	var err error
	waitFor(t, "RPCs to fail with "+code.String()+" "+text, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = call(ctx, cc, testMethod)
		return status.Code(err) == code && strings.Contains(err.Error(), text)
	})
	return err
}

// TestClusterErrorStaysWithItsRoutes: a cluster that does not exist fails
// the RPCs routed to it, and only those (gRFC A74); once it arrives, they
// succeed.
func TestClusterErrorStaysWithItsRoutes(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	routes := routeConfig(toCluster(prefix("/missing."), "missing"), toCluster(prefix(""), "ca"))
	good := []xdstest.Resource{cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)})}
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := newEngine(t, srv, func(c *engine.Config) { c.ResourceTimeout = 100 * time.Millisecond })
	ev := &env{srv: srv, e: e, b: newBuilder(t, xdsgrpc.Options{Source: e})}
	ev.srv.Set(basic(routes, good...)...)
	cc := dial(t, ev.b, "xdsengine:///svc")
	if got := spread(t, cc, 5, testMethod); got["a"] != 5 {
		t.Fatalf("RPCs to the good cluster went %v, want a", got)
	}
	// The cluster missing from a State of the World CDS response does
	// not exist.
	err := rpcError(t, cc, "/missing.Service/Call")
	t.Logf("the RPC to the missing cluster: %v", err)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), `cluster "missing"`) {
		t.Fatalf("an RPC to the missing cluster failed with %v, want UNAVAILABLE naming the cluster", err)
	}
	ev.srv.Set(basic(routes, append(good, cluster("missing"), endpoints("missing", xdstest.Locality{Zone: "z", Endpoints: addrs(b)}))...)...)
	waitFor(t, "the new cluster", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		got, err := call(ctx, cc, "/missing.Service/Call")
		return err == nil && got == "b"
	})
}

// TestListenerErrors: a Listener or RouteConfiguration that cannot be had
// fails every RPC with UNAVAILABLE, and a message that says why with the
// engine's code (gRFC A88); grpc-go does not let a picker fail RPCs with
// the control plane's codes (gRFC A54).
func TestListenerErrors(t *testing.T) {
	a := startBackend(t, "a")
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := newEngine(t, srv, func(c *engine.Config) { c.ResourceTimeout = 100 * time.Millisecond })
	b := newBuilder(t, xdsgrpc.Options{Source: e})
	nowhere := routeConfig(toCluster(prefix(""), "ca"))
	nowhere.Name = "nowhere"
	nowhere.VirtualHosts[0].Domains = []string{"other.example"}
	srv.Set(
		xdstest.R("no-route", xdstest.Listener("no-route", "absent")),
		xdstest.R("no-vhost", xdstest.Listener("no-vhost", "nowhere")),
		xdstest.R("nowhere", nowhere),
		cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}),
	)
	cases := []struct{ target, want string }{
		{"xdsengine:///absent", "NotFound"},
		{"xdsengine:///no-route", `RouteConfiguration resource "absent"`},
		{"xdsengine:///no-vhost", "no virtual host"},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			cc := dial(t, b, c.target)
			err := rpcError(t, cc, testMethod)
			t.Log(err)
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), xdstest.DefaultNodeID) {
				t.Fatalf("got %v, want UNAVAILABLE with %q and the node ID", err, c.want)
			}
		})
	}
}

// TestAmbientErrorsKeepTheConfiguration: an unreachable management
// server, a deleted Listener (without fail_on_data_errors) and a NACKed
// update leave the last good configuration in use (gRFC A88).
func TestAmbientErrorsKeepTheConfiguration(t *testing.T) {
	a := startBackend(t, "a")
	ev := newEnv(t, xdsgrpc.Options{})
	good := basic(routeConfig(toCluster(prefix(""), "ca")), cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}))
	ev.srv.Set(good...)
	cc := dial(t, ev.b, "xdsengine:///svc")
	waitForBackend(t, cc, "a")

	bad := routeConfig(toCluster(&routepb.RouteMatch{}, "ca")) // no path specifier: NACKed
	ev.srv.Update(rds.TypeURL, xdstest.R("route", bad))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ev.srv.WaitForRequest(ctx, xdstest.IsNACK(rds.TypeURL)); err != nil {
		t.Fatal(err)
	}
	if got := spread(t, cc, 5, testMethod); got["a"] != 5 {
		t.Fatalf("after a NACK RPCs went %v, want the last good routes", got)
	}

	ev.srv.Set(good[1:]...) // the Listener deleted
	time.Sleep(100 * time.Millisecond)
	if got := spread(t, cc, 5, testMethod); got["a"] != 5 {
		t.Fatalf("after the Listener's deletion RPCs went %v, want the last good routes", got)
	}

	ev.srv.Stop()
	time.Sleep(100 * time.Millisecond)
	if got := spread(t, cc, 5, testMethod); got["a"] != 5 {
		t.Fatalf("with the server down RPCs went %v, want the last good routes", got)
	}
}

// TestFailOnDataErrors: with fail_on_data_errors, a deleted Listener is a
// resource error: the channel stops using it and fails its RPCs.
func TestFailOnDataErrors(t *testing.T) {
	a := startBackend(t, "a")
	srv := xdstest.NewServer(t, xdstest.Options{})
	e := newEngine(t, srv, func(c *engine.Config) { c.Bootstrap.Servers[0].ServerFeatures = []string{"fail_on_data_errors"} })
	b := newBuilder(t, xdsgrpc.Options{Source: e})
	good := basic(routeConfig(toCluster(prefix(""), "ca")), cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}))
	srv.Set(good...)
	cc := dial(t, b, "xdsengine:///svc")
	waitForBackend(t, cc, "a")
	srv.Set(good[1:]...)
	waitForError(t, cc, codes.Unavailable, "NotFound")
}

// TestWaitForReadyBeforeConfiguration: while no configuration has come
// (the server is down), RPCs fail fast with UNAVAILABLE but wait-for-ready
// RPCs wait, and complete once the server answers.
func TestWaitForReadyBeforeConfiguration(t *testing.T) {
	a := startBackend(t, "a")
	ev := newEnv(t, xdsgrpc.Options{})
	ev.srv.Stop()
	cc := dial(t, ev.b, "xdsengine:///svc")
	waitForError(t, cc, codes.Unavailable, "")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := call(ctx, cc, testMethod)
		done <- err
	}()
	wfr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		wfr <- cc.Invoke(ctx, testMethod, emptyMsg(), emptyMsg(), grpc.WaitForReady(true))
	}()
	if err := <-done; status.Code(err) != codes.Unavailable {
		t.Fatalf("a fail-fast RPC got %v, want UNAVAILABLE", err)
	}
	ev.srv.Set(basic(routeConfig(toCluster(prefix(""), "ca")), cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}))...)
	ev.srv.Restart()
	if err := <-wfr; err != nil {
		t.Fatalf("the wait-for-ready RPC got %v, want it to complete once the server answers", err)
	}
}

// TestTargets: targets the builder cannot name a Listener for fail the
// channel's RPCs at once.
func TestTargets(t *testing.T) {
	ev := newEnv(t, xdsgrpc.Options{})
	for _, target := range []string{"xdsengine:///", "xdsengine://authority.example/svc"} {
		cc, err := ev.b.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		err = rpcError(t, cc, testMethod)
		cc.Close()
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), target) {
			t.Errorf("%s: got %v, want UNAVAILABLE naming the target", target, err)
		}
	}
}

// TestOtherVirtualHosts: only the virtual host the channel's authority
// selects is followed (gRFC A74): the clusters of the others are not
// watched, and a broken one cannot touch the channel.
func TestOtherVirtualHosts(t *testing.T) {
	a := startBackend(t, "a")
	ev := newEnv(t, xdsgrpc.Options{})
	routes := routeConfig(toCluster(prefix(""), "ca"))
	routes.VirtualHosts[0].Domains = []string{"svc"}
	routes.VirtualHosts = append(routes.VirtualHosts, &routepb.VirtualHost{Name: "other", Domains: []string{"*"},
		Routes: []*routepb.Route{toCluster(prefix(""), "nowhere")}})
	ev.srv.Set(basic(routes, cluster("ca"), endpoints("ca", xdstest.Locality{Zone: "z", Endpoints: addrs(a)}))...)
	if got := spread(t, dial(t, ev.b, "xdsengine:///svc"), 5, testMethod); got["a"] != 5 {
		t.Fatalf("5 RPCs went %v, want backend a", got)
	}
	for _, r := range ev.srv.Requests() {
		for _, name := range r.GetResourceNames() {
			if name == "nowhere" {
				t.Fatalf("the channel watched cluster %q of another virtual host", name)
			}
		}
	}
}
