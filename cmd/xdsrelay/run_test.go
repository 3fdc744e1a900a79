package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/xds"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/internal/testutil/testpki"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestMain(m *testing.M) {
	healthInterval = 20 * time.Millisecond
	goleak.VerifyTestMain(m)
}

const wait = 10 * time.Second

// syncBuffer is a bytes.Buffer safe for run's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string // substrings of stdout and stderr
	}{
		{[]string{"-h"}, exitOK, "Usage:\n  xdsrelay [flags]", ""},
		{[]string{"--version"}, exitOK, "xdsrelay " + engine.Version, ""},
		{[]string{"--key", "node"}, exitUsage, "", `--key: aggregation key "node": want cluster, id or metadata:NAME`},
		{[]string{"--key", "metadata:"}, exitUsage, "", "metadata needs a field name"},
		{[]string{"--linger", "0s"}, exitUsage, "", "--linger 0s: must be positive"},
		{[]string{"--registry", "envoy"}, exitUsage, "", `--registry "envoy": want builtin, passthrough or passthrough-pgv`},
		{[]string{"--demo", "--demo-interval", "0s"}, exitUsage, "", "--demo-interval 0s: must be positive"},
		{[]string{"--demo", "--demo-interval", "-1s"}, exitUsage, "", "--demo-interval -1s: must be positive"},
		{[]string{"--demo-interval", "1s"}, exitUsage, "", "--demo-interval needs --demo"},
		{[]string{"--demo-interval", "soon"}, exitUsage, "", `invalid value "soon" for flag -demo-interval`},
		{[]string{"--listen", "localhost"}, exitUsage, "", `--listen "localhost": want host:port`},
		{[]string{"--tls-cert", "c.pem"}, exitUsage, "", "--tls-cert and --tls-key go together"},
		{[]string{"--client-ca", "ca.pem"}, exitUsage, "", "--client-ca needs --tls-cert and --tls-key"},
		{[]string{"--log-level", "loud"}, exitUsage, "", `--log-level "loud"`},
		{[]string{"--demo", "--bootstrap", "b.json"}, exitUsage, "", "--demo and --bootstrap exclude each other"},
		{[]string{"serve"}, exitUsage, "", `unexpected argument "serve"`},
		{[]string{"--nope"}, exitUsage, "", "flag provided but not defined: -nope"},
		{[]string{"--bootstrap", "/does/not/exist.json", "--listen", "127.0.0.1:0"}, exitFailure, "", "--bootstrap: open /does/not/exist.json"},
		{[]string{"--tls-cert", "/no/c.pem", "--tls-key", "/no/k.pem"}, exitFailure, "", "--tls-cert /no/c.pem, --tls-key /no/k.pem"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr syncBuffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.out) || !strings.Contains(stderr.String(), tc.err) {
				t.Errorf("run %q = %d, stdout %q, stderr %q; want %d, %q in stdout, %q in stderr",
					tc.args, code, stdout.String(), stderr.String(), tc.code, tc.out, tc.err)
			}
		})
	}
}

// running is one run of xdsrelay in the test's process.
type running struct {
	addr   string
	stderr *syncBuffer
	stop   context.CancelFunc
	code   chan int
}

var addrLine = regexp.MustCompile(`serving xDS, health and CSDS" addr=(\S+)`)

// start runs xdsrelay with args (and --listen 127.0.0.1:0) until the
// test ends or stops it.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{stderr: &syncBuffer{}, stop: cancel, code: make(chan int, 1)}
	go func() { r.code <- run(ctx, append(args, "--listen", "127.0.0.1:0"), &syncBuffer{}, r.stderr) }()
	t.Cleanup(func() {
		cancel()
		<-r.code
	})
	deadline := time.Now().Add(wait)
	for r.addr == "" {
		if m := addrLine.FindStringSubmatch(r.stderr.String()); m != nil {
			r.addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("xdsrelay did not start; its log:\n%s", r.stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r
}

// clientOf is an xdsengine engine of the relay at addr in cluster.
func clientOf(t *testing.T, addr, cluster string) *engine.Engine {
	t.Helper()
	bs, err := bootstrap.Parse(fmt.Appendf(nil, `{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}], "node": {"id": "c", "cluster": %q}}`, addr, cluster))
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry(), Transport: transport.GRPC(relaytest.FastDial)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// waitForEDS waits until e's watch of the cluster names eds.
func waitForEDS(t *testing.T, e *engine.Engine, cluster, want string) {
	t.Helper()
	got := make(chan string, 100)
	defer e.Watch(cds.TypeURL, cluster, engine.WatcherFuncs{ResourceChanged: func(r registry.Resource, err error, done func()) {
		if c, ok := r.(*cds.Cluster); ok {
			got <- c.EDSName()
		}
		done()
	}})()
	deadline := time.After(wait)
	for {
		select {
		case name := <-got:
			if name == want {
				return
			}
		case <-deadline:
			t.Fatalf("cluster %s never had EDS name %s", cluster, want)
		}
	}
}

func healthOf(t *testing.T, cc *grpc.ClientConn, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health of %q: %v", service, err)
	}
	return resp.GetStatus()
}

func waitForHealth(t *testing.T, cc *grpc.ClientConn, service string, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for got := healthOf(t, cc, service); got != want; got = healthOf(t, cc, service) {
		if time.Now().After(deadline) {
			t.Fatalf("health of %q is %v, want %v", service, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dialPlain(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// TestServe: xdsrelay relays an upstream's configuration to clients,
// reports its upstream's health and its engines over CSDS on the same
// port, and shuts down gracefully.
func TestServe(t *testing.T) {
	for _, how := range []string{"--bootstrap", "GRPC_XDS_BOOTSTRAP"} {
		t.Run(how, func(t *testing.T) {
			up := xdstest.NewServer(t, xdstest.Options{})
			up.Set(xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-1")))
			path := filepath.Join(t.TempDir(), "bootstrap.json")
			if err := os.WriteFile(path, up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}), 0o600); err != nil {
				t.Fatal(err)
			}
			var args []string
			if how == "--bootstrap" {
				args = []string{"--bootstrap", path}
			} else {
				t.Setenv("GRPC_XDS_BOOTSTRAP", path)
			}
			r := start(t, args...)
			admin := dialPlain(t, r.addr)
			if got := healthOf(t, admin, ""); got != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health of the relay = %v, want SERVING from the start", got)
			}
			if got := healthOf(t, admin, upstreamService); got != healthpb.HealthCheckResponse_UNKNOWN {
				t.Errorf("health of the upstream before any client = %v, want UNKNOWN", got)
			}

			waitForEDS(t, clientOf(t, r.addr, "blue"), "cluster-1", "eds-1")
			waitForHealth(t, admin, upstreamService, healthpb.HealthCheckResponse_SERVING)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			dump, err := statuspb.NewClientStatusDiscoveryServiceClient(admin).FetchClientStatus(ctx, &statuspb.ClientStatusRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(dump.GetConfig()); n != 1 || dump.GetConfig()[0].GetClientScope() != "blue" || dump.GetConfig()[0].GetNode().GetCluster() != "blue" {
				t.Errorf("CSDS: %v, want one engine, of key blue, presenting cluster blue", dump)
			}

			up.Stop()
			waitForHealth(t, admin, upstreamService, healthpb.HealthCheckResponse_NOT_SERVING)
			if got := healthOf(t, admin, ""); got != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health of the relay during an upstream outage = %v, want SERVING", got)
			}
			up.Restart()
			waitForHealth(t, admin, upstreamService, healthpb.HealthCheckResponse_SERVING)

			r.stop()
			select {
			case code := <-r.code:
				r.code <- code
				if code != exitOK {
					t.Errorf("xdsrelay exited %d after the signal, want 0; log:\n%s", code, r.stderr)
				}
			case <-time.After(wait):
				t.Fatal("xdsrelay did not shut down")
			}
		})
	}
}

// TestMutualTLS: with --client-ca, a client needs a certificate of that
// CA.
func TestMutualTLS(t *testing.T) {
	up := xdstest.NewServer(t, xdstest.Options{})
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(boot, up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := testpki.NewCA(t, "relay CA")
	srv := ca.Server(t, "127.0.0.1")
	r := start(t, "--bootstrap", boot,
		"--tls-cert", testpki.WriteFile(t, dir, "cert.pem", srv.CertPEM), "--tls-key", testpki.WriteFile(t, dir, "key.pem", srv.KeyPEM),
		"--client-ca", testpki.WriteFile(t, dir, "ca.pem", ca.CertPEM))
	dialTLS := func(certs ...tls.Certificate) *grpc.ClientConn {
		cc, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool, Certificates: certs})))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	if got := healthOf(t, dialTLS(ca.Client(t, "client").TLS), ""); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health with a client certificate = %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(dialTLS()).Check(ctx, &healthpb.HealthCheckRequest{}); err == nil {
		t.Error("a client without a certificate was served")
	}
}

// TestDemo: --demo relays its own upstream, whose endpoints change, to
// xdsengine clients and to grpc-go's, whose RPCs reach the demo's
// backends.
func TestDemo(t *testing.T) {
	r := start(t, "--demo", "--demo-interval", "20ms")
	resolver, err := xds.NewXDSResolverWithConfigForTesting(fmt.Appendf(nil,
		`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}], "node": {"id": "grpc-go", "cluster": "demo"}}`, r.addr))
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient("xds:///"+demoListener, grpc.WithResolvers(resolver), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	waitForHealth(t, cc, "demo", healthpb.HealthCheckResponse_SERVING)

	c := clientOf(t, r.addr, "demo")
	seen := make(chan int, 100)
	defer c.Watch(eds.TypeURL, demoEndpoints, engine.WatcherFuncs{ResourceChanged: func(res registry.Resource, err error, done func()) {
		if cla, ok := res.(*eds.ClusterLoadAssignment); ok && len(cla.Localities) > 0 {
			seen <- len(cla.Localities[0].Endpoints)
		}
		done()
	}})()
	sizes := map[int]bool{}
	deadline := time.After(wait)
	for len(sizes) < 2 {
		select {
		case n := <-seen:
			sizes[n] = true
		case <-deadline:
			t.Fatalf("the demo's endpoints did not change through the relay: saw sizes %v", sizes)
		}
	}
}

// TestStore: with --store, xdsrelay restarted while its upstream is down
// serves what it had.
func TestStore(t *testing.T) {
	up := xdstest.NewServer(t, xdstest.Options{})
	up.Set(xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-1")))
	dir := t.TempDir()
	boot := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(boot, up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	first := start(t, "--bootstrap", boot, "--store", store)
	waitForEDS(t, clientOf(t, first.addr, "blue"), "cluster-1", "eds-1")
	first.stop()
	<-first.code
	first.code <- exitOK
	if _, err := os.Stat(filepath.Join(store, "key=blue.lastgood")); err != nil {
		t.Fatalf("the key's store: %v", err)
	}

	up.Stop()
	second := start(t, "--bootstrap", boot, "--store", store)
	waitForEDS(t, clientOf(t, second.addr, "blue"), "cluster-1", "eds-1")
}

// TestPassthroughRegistry: --registry passthrough relays what gRPC's
// rules reject, such as Envoy's STATIC clusters.
func TestPassthroughRegistry(t *testing.T) {
	up := xdstest.NewServer(t, xdstest.Options{})
	up.Set(xdstest.R("BlackHoleCluster", &clusterpb.Cluster{Name: "BlackHoleCluster",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC}}))
	boot := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(boot, up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}), 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, "--bootstrap", boot, "--registry", "passthrough")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	st, err := discoverypb.NewAggregatedDiscoveryServiceClient(dialPlain(t, r.addr)).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Envoy's wildcard: no names.
	if err := st.Send(&discoverypb.DiscoveryRequest{Node: &corepb.Node{Id: "envoy", Cluster: "blue"}, TypeUrl: cds.TypeURL}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetResources()); n != 1 {
		t.Fatalf("the Envoy client got %d clusters, want the STATIC one: %v", n, resp)
	}
}

// TestListenFirst: on an address in use, xdsrelay fails at once, naming
// the flag and the address, and starts nothing before: not the demo's
// upstream, not its backends.
func TestListenFirst(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	var stdout, stderr syncBuffer
	code := run(context.Background(), []string{"--demo", "--listen", addr}, &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "--listen "+addr) || !strings.Contains(stderr.String(), "address already in use") {
		t.Errorf("run on a busy address = %d, stderr %q; want %d and the flag, the address and why", code, stderr.String(), exitFailure)
	}
	for _, started := range []string{"demo upstream", "demo backends"} {
		if strings.Contains(stderr.String(), started) {
			t.Errorf("xdsrelay started the %s before it could listen:\n%s", started, stderr.String())
		}
	}
}

// TestHealthProbes: the probes the help text documents. "" is SERVING as
// soon as xdsrelay serves, whatever its upstream does: a liveness and a
// readiness probe. "upstream", for alerting, is UNKNOWN while no client is
// subscribed (nothing is asked of the upstream), and the log says why;
// NOT_SERVING while a client's upstream is unreachable; SERVING once it
// answers.
func TestHealthProbes(t *testing.T) {
	up := xdstest.NewServer(t, xdstest.Options{})
	up.Set(xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-1")))
	boot := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(boot, up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}), 0o600); err != nil {
		t.Fatal(err)
	}
	up.Stop() // down from the start

	r := start(t, "--bootstrap", boot)
	admin := dialPlain(t, r.addr)
	if got := healthOf(t, admin, ""); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf(`health of "" at start, upstream down = %v, want SERVING: the relay is live and takes clients`, got)
	}
	if got := healthOf(t, admin, upstreamService); got != healthpb.HealthCheckResponse_UNKNOWN {
		t.Errorf("health of the upstream before any client = %v, want UNKNOWN", got)
	}
	if !strings.Contains(r.stderr.String(), "no client is subscribed, so nothing is asked of the upstream") {
		t.Errorf("the log does not say why the upstream's health is unknown:\n%s", r.stderr)
	}

	c := clientOf(t, r.addr, "blue")
	// A client subscribed: the relay asks its upstream, which is down.
	defer c.Watch(cds.TypeURL, "cluster-1", engine.WatcherFuncs{})()
	waitForHealth(t, admin, upstreamService, healthpb.HealthCheckResponse_NOT_SERVING)
	if got := healthOf(t, admin, ""); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf(`health of "" with a client and its upstream down = %v, want SERVING`, got)
	}
	up.Restart()
	waitForEDS(t, c, "cluster-1", "eds-1")
	waitForHealth(t, admin, upstreamService, healthpb.HealthCheckResponse_SERVING)
}

// TestUpstreamNACKHealth: a response the relay rejects (NACK) leaves
// "upstream" SERVING, for the upstream answers and its clients keep the
// last good version, and the log names the key and what was rejected.
func TestUpstreamNACKHealth(t *testing.T) {
	up := xdstest.NewServer(t, xdstest.Options{})
	up.Set(xdstest.R("cluster-1", xdstest.Cluster("cluster-1", "eds-1")))
	boot := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(boot, up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}), 0o600); err != nil {
		t.Fatal(err)
	}
	r := start(t, "--bootstrap", boot)
	admin := dialPlain(t, r.addr)
	waitForEDS(t, clientOf(t, r.addr, "blue"), "cluster-1", "eds-1")
	waitForHealth(t, admin, upstreamService, healthpb.HealthCheckResponse_SERVING)

	// gRPC's rules, those of --registry builtin, reject STATIC clusters.
	up.Update(cds.TypeURL, xdstest.R("cluster-1", &clusterpb.Cluster{Name: "cluster-1",
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_STATIC}}))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := up.WaitForRequest(ctx, xdstest.IsNACK(cds.TypeURL)); err != nil {
		t.Fatalf("the relay did not NACK the STATIC cluster: %v", err)
	}
	nackLine := regexp.MustCompile(`rejected \(NACKed\) resources the upstream sent.* key=blue .*cluster-1.*STATIC`)
	deadline := time.Now().Add(wait)
	for !nackLine.MatchString(r.stderr.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the log does not tell of the NACK:\n%s", r.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(5 * healthInterval) // what a NACK would do to the health, done by then
	if got := healthOf(t, admin, upstreamService); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health of the upstream after a NACK = %v, want SERVING", got)
	}
}

// TestPassthroughValidation: --registry passthrough checks only that a
// resource parses, and so relays istiod's Listener for proxyless gRPC
// (an api_listener whose connection manager has no stat_prefix) to a gRPC
// client; passthrough-pgv applies Envoy's rules, which reject it.
func TestPassthroughValidation(t *testing.T) {
	for _, tc := range []struct {
		registry string
		nack     bool
	}{
		{"passthrough", false},
		{"passthrough-pgv", true},
	} {
		t.Run(tc.registry, func(t *testing.T) {
			up := xdstest.NewServer(t, xdstest.Options{})
			up.Set(xdstest.R("service", xdstest.Listener("service", "route-1")))
			boot := filepath.Join(t.TempDir(), "bootstrap.json")
			if err := os.WriteFile(boot, up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}), 0o600); err != nil {
				t.Fatal(err)
			}
			r := start(t, "--bootstrap", boot, "--registry", tc.registry)
			got := make(chan error, 100)
			defer clientOf(t, r.addr, "blue").Watch(lds.TypeURL, "service", engine.WatcherFuncs{ResourceChanged: func(res registry.Resource, err error, done func()) {
				got <- err
				done()
			}})()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if tc.nack {
				if _, err := up.WaitForRequest(ctx, xdstest.IsNACK(lds.TypeURL)); err != nil {
					t.Fatalf("%s did not NACK the listener: %v", tc.registry, err)
				}
				return
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("the client got %v, want the listener", err)
				}
			case <-ctx.Done():
				t.Fatal("the client never got the listener")
			}
			if n := len(up.NACKs()); n != 0 {
				t.Errorf("%s NACKed %d responses: %s", tc.registry, n, up.NACKs()[0].GetErrorDetail().GetMessage())
			}
		})
	}
}
