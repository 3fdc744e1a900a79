package xdstest_test

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestBootstrapParses(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	fallback := xdstest.NewServer(t, xdstest.Options{Name: "fallback"})
	tests := []struct {
		desc       string
		opts       xdstest.BootstrapOptions
		wantNode   string
		wantURIs   []string
		wantFeatur []string
	}{
		{"defaults", xdstest.BootstrapOptions{}, xdstest.DefaultNodeID, []string{primary.Addr()}, nil},
		{"node and features", xdstest.BootstrapOptions{NodeID: "n7", ServerFeatures: []string{"fail_on_data_errors"}},
			"n7", []string{primary.Addr()}, []string{"fail_on_data_errors"}},
		{"fallback", xdstest.BootstrapOptions{Fallback: []*xdstest.Server{fallback}}, xdstest.DefaultNodeID,
			[]string{primary.Addr(), fallback.Addr()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			bs, err := bootstrap.Parse(primary.Bootstrap(tt.opts))
			if err != nil {
				t.Fatalf("bootstrap.Parse: %v", err)
			}
			if bs.Node.ID != tt.wantNode {
				t.Errorf("node ID %q, want %q", bs.Node.ID, tt.wantNode)
			}
			var uris []string
			for _, s := range bs.Servers {
				uris = append(uris, s.URI)
				if !slices.Equal(s.ServerFeatures, tt.wantFeatur) {
					t.Errorf("server %s features %v, want %v", s.URI, s.ServerFeatures, tt.wantFeatur)
				}
				if len(s.ChannelCreds) != 1 || s.ChannelCreds[0].Type != "insecure" {
					t.Errorf("server %s channel creds %+v, want insecure", s.URI, s.ChannelCreds)
				}
			}
			if !slices.Equal(uris, tt.wantURIs) {
				t.Errorf("servers %v, want %v", uris, tt.wantURIs)
			}
		})
	}
	if got := primary.ServerConfig("ignore_resource_deletion"); got.URI != primary.Addr() || !slices.Equal(got.ServerFeatures, []string{"ignore_resource_deletion"}) {
		t.Errorf("ServerConfig = %+v", got)
	}
}

// TestBootstrapAuthorities: the authorities round-trip through
// bootstrap.Parse, with their own servers or the top-level ones.
func TestBootstrapAuthorities(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	other := xdstest.NewServer(t, xdstest.Options{Name: "other"})
	bs, err := bootstrap.Parse(primary.Bootstrap(xdstest.BootstrapOptions{
		ServerFeatures: []string{"fail_on_data_errors"},
		Authorities: map[string]xdstest.Authority{
			"own.example":     {Servers: []*xdstest.Server{other, primary}, FallbackOnReachabilityOnly: true},
			"default.example": {},
		},
	}))
	if err != nil {
		t.Fatalf("bootstrap.Parse: %v", err)
	}
	if len(bs.Authorities) != 2 {
		t.Fatalf("authorities %+v, want own.example and default.example", bs.Authorities)
	}
	own := bs.Authorities["own.example"]
	var uris []string
	for _, s := range own.Servers {
		uris = append(uris, s.URI)
		if !slices.Equal(s.ServerFeatures, []string{"fail_on_data_errors"}) {
			t.Errorf("own.example server %s features %v, want [fail_on_data_errors]", s.URI, s.ServerFeatures)
		}
	}
	if want := []string{other.Addr(), primary.Addr()}; !slices.Equal(uris, want) {
		t.Errorf("own.example servers %v, want %v", uris, want)
	}
	if !own.FallbackOnReachabilityOnly {
		t.Error("own.example: FallbackOnReachabilityOnly false, want true")
	}
	def, ok := bs.Authorities["default.example"]
	if !ok || len(def.Servers) != 0 || def.FallbackOnReachabilityOnly {
		t.Errorf("default.example = %+v (present %v), want present with no servers of its own", def, ok)
	}
}

// TestCutConnections: open streams fail as on a network failure, and the
// server keeps serving: the client's next stream gets the resources.
func TestCutConnections(t *testing.T) {
	s := xdstest.NewServer(t, xdstest.Options{Name: "cut"})
	s.Set(listener("l1"))
	cc := dial(t, s.Addr())
	c := mustOpen(t, cc, "node-c")
	c.subscribe(ldsURL, "", "l1")
	c.ack(c.expectOne(ldsURL))
	if err := s.WaitForOpenStreams(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	if n := s.CutConnections(); n != 1 {
		t.Errorf("CutConnections() = %d, want 1", n)
	}
	if err := c.streamErr(); status.Code(err) != codes.Unavailable {
		t.Fatalf("stream ended with %v, want code Unavailable", err)
	}
	c = mustOpen(t, cc, "node-c")
	c.subscribe(ldsURL, "", "l1")
	if got := names(t, c.expectOne(ldsURL)); !slices.Equal(got, []string{"l1"}) {
		t.Fatalf("after the cut: resources %v, want [l1]", got)
	}
}

// TestBootstrapAuthorityServes: an engine built from the bootstrap fetches
// an xdstp:// cluster from the authority's own server, which is the only
// one that has it.
func TestBootstrapAuthorityServes(t *testing.T) {
	primary := xdstest.NewServer(t, xdstest.Options{Name: "primary"})
	own := xdstest.NewServer(t, xdstest.Options{Name: "own"})
	const name = "xdstp://own.example/envoy.config.cluster.v3.Cluster/backend"
	primary.Set()
	own.Set(xdstest.R(name, xdstest.Cluster(name, "backend-endpoints")))
	bs, err := bootstrap.Parse(primary.Bootstrap(xdstest.BootstrapOptions{
		Authorities: map[string]xdstest.Authority{"own.example": {Servers: []*xdstest.Server{own}}},
	}))
	if err != nil {
		t.Fatalf("bootstrap.Parse: %v", err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	defer e.Close()
	got := make(chan string, 1)
	defer cds.Watch(e, name, engine.TypedWatcherFuncs[*cds.Cluster]{
		ResourceChanged: func(c *cds.Cluster, err error, done func()) {
			defer done()
			msg := ""
			if err != nil {
				msg = err.Error()
			} else {
				msg = c.EDSName()
			}
			select {
			case got <- msg:
			default:
			}
		},
	})()
	select {
	case msg := <-got:
		if msg != "backend-endpoints" {
			t.Fatalf("watcher got %q, want the cluster with EDS name backend-endpoints", msg)
		}
	case <-ctxT(t).Done():
		t.Fatal("no update for the authority's cluster")
	}
	if n := primary.StreamsOpened(); n != 0 {
		t.Errorf("primary saw %d streams, want 0: the authority has its own server", n)
	}
}
