package engine_test

import (
	"strings"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

const (
	thing    = testtype.TypeURL
	required = testtype.RequiredTypeURL
	nodeID   = "test-node"
)

// fixture is an engine wired to scripted servers and a fake clock.
type fixture struct {
	t       *testing.T
	clock   *fakeclock.Clock
	servers []*scriptedads.Server
	eng     *engine.Engine
	cfg     engine.Config // eng's, for another engine on the same servers
}

type fixtureOpts struct {
	servers        int
	serverFeatures []string
	switches       features.Switches
	features       []features.ServerFeature
	mutate         func(*engine.Config)
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	if o.servers == 0 {
		o.servers = 1
	}
	f := &fixture{t: t, clock: fakeclock.New(time.Unix(1_700_000_000, 0))}
	var servers []bootstrap.ServerConfig
	for i := 0; i < o.servers; i++ {
		s := scriptedads.Start(t)
		f.servers = append(f.servers, s)
		servers = append(servers, bootstrap.InsecureServer(s.Addr(), o.serverFeatures...))
	}
	sw := o.switches
	cfg := engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: servers, Node: bootstrap.Node{ID: nodeID}},
		Registry:  testtype.Registry(),
		Clock:     f.clock,
		Switches:  &sw,
		Features:  o.features,
		Backoff:   func(n int) time.Duration { return time.Duration(n+1) * time.Second },
		// The scripted server's silence is the test's, and the fake clock
		// jumps over the window whenever a test advances it for another
		// timer: only the tests of the window (quiet_test.go) open it.
		QuietWindow: -1,
	}
	cfg.Transport = transport.GRPC(grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
		MinConnectTimeout: time.Second,
	}))
	if o.mutate != nil {
		o.mutate(&cfg)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	f.eng, f.cfg = eng, cfg
	t.Cleanup(func() { eng.Close() })
	return f
}

func (f *fixture) watch(typeURL, name string) (*watchrec.Recorder, func()) {
	r := watchrec.New()
	cancel := f.eng.Watch(typeURL, name, r)
	return r, cancel
}

// res builds a test resource in an Any.
func res(typeURL, name string, kv ...any) *anypb.Any {
	return testtype.Any(typeURL, name, kv...)
}

func resp(typeURL, version string, resources ...*anypb.Any) *discoverypb.DiscoveryResponse {
	return scriptedads.Response(typeURL, version, resources...)
}

// wantRequest checks the fields of a request that tests care about.
func wantRequest(t *testing.T, got *discoverypb.DiscoveryRequest, typeURL, version, nonce string, names ...string) {
	t.Helper()
	if names == nil {
		names = []string{}
	}
	gotNames := got.GetResourceNames()
	if gotNames == nil {
		gotNames = []string{}
	}
	if got.GetTypeUrl() != typeURL || got.GetVersionInfo() != version || got.GetResponseNonce() != nonce || !cmp.Equal(gotNames, names) {
		t.Fatalf("request = {type %s, version %q, nonce %q, names %v, nack %v}, want {type %s, version %q, nonce %q, names %v}",
			got.GetTypeUrl(), got.GetVersionInfo(), got.GetResponseNonce(), gotNames, got.GetErrorDetail(), typeURL, version, nonce, names)
	}
}

func resourceName(t *testing.T, r registry.Resource) string {
	t.Helper()
	tr, ok := r.(*testtype.Resource)
	if !ok {
		t.Fatalf("resource is %T, want *testtype.Resource", r)
	}
	return tr.Name
}

var _ = protocmp.Transform

// recvNames reads requests until one of typeURL subscribes exactly names
// (watches registered one after the other may reach the wire in several
// requests) and returns it.
func recvNames(t *testing.T, st *scriptedads.Stream, typeURL string, names ...string) *discoverypb.DiscoveryRequest {
	t.Helper()
	for {
		req := st.RecvT(t)
		if req.GetTypeUrl() == typeURL && cmp.Equal(req.GetResourceNames(), names) {
			return req
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
