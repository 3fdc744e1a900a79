package leds_test

import (
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// ExampleWatchGlob watches a LEDS glob collection (xRFC TP1) on an engine
// connected to an incremental (delta) management server. The engine
// subscribes to the glob's name and delivers the members the server sends
// as one collection, again each time members are added or removed. Globs
// are xdstp:// names, so the bootstrap lists their authority; the server
// has the delta_xds feature, since only incremental xDS says which members
// went away.
func ExampleWatchGlob() {
	const (
		glob = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/zone-a/*"
		m1   = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/zone-a/m1"
		m2   = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/zone-a/m2"
		m3   = "xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/zone-b/m3"
	)
	srv := &globServer{
		members: map[string]proto.Message{
			m1: xdstest.LbEndpoint("10.0.0.1:8080"),
			m2: xdstest.LbEndpoint("10.0.0.2:8080"),
			m3: xdstest.LbEndpoint("10.0.1.3:8080"), // another collection's
		},
		thenRemove: []string{m1},
		subscribed: make(chan string, 1),
	}
	addr, stop := srv.serve()
	defer stop()

	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers:     []bootstrap.ServerConfig{bootstrap.InsecureServer(addr, features.NameDeltaXDS)},
			Authorities: map[string]bootstrap.Authority{"endpoints.example": {}}, // on the servers above
			Node:        bootstrap.Node{ID: "example-node"},
		},
		Registry: builtin.Registry(),
		// LEDS is on unless GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=false;
		// pinned here so that the example does not depend on it.
		Switches: &features.Switches{},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	updates := make(chan string, 4)
	cancel := leds.WatchGlob(e, glob, engine.TypedWatcherFuncs[*registry.GlobCollection]{
		ResourceChanged: func(c *registry.GlobCollection, err error, done func()) {
			defer done()
			var u string
			if err == nil {
				var eps []leds.Endpoint
				if eps, err = leds.GlobEndpoints(c); err == nil {
					u = "members:"
					for _, ep := range eps {
						u += " " + ep.Address.String()
					}
				}
			}
			if err != nil {
				u = "error: " + err.Error()
			}
			select {
			case updates <- u:
			default: // more updates than this example reads
			}
		},
	})
	defer cancel()

	fmt.Println("subscribed:", <-srv.subscribed)
	fmt.Println(<-updates)
	fmt.Println(<-updates) // m1 removed
	// Output:
	// subscribed: xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/zone-a/*
	// members: 10.0.0.1:8080 10.0.0.2:8080
	// members: 10.0.0.2:8080
}

// globServer is a management server that speaks incremental ADS only. It
// answers a subscription to a glob ".../*" with every member it holds
// directly under that path (go-control-plane's caches do not expand
// xdstp:// globs), and once the client has ACKed that first response, it
// removes the members named in thenRemove.
type globServer struct {
	discoverypb.UnimplementedAggregatedDiscoveryServiceServer
	members    map[string]proto.Message // by name
	thenRemove []string
	subscribed chan string // each name subscribed to, if there is room
}

func (s *globServer) DeltaAggregatedResources(stream discoverypb.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	nonce := 0
	for {
		req, err := stream.Recv()
		if err != nil {
			return err // the client went away
		}
		resp := &discoverypb.DeltaDiscoveryResponse{TypeUrl: req.GetTypeUrl(), SystemVersionInfo: strconv.Itoa(nonce + 1)}
		if req.GetResponseNonce() == "1" && req.GetErrorDetail() == nil {
			resp.RemovedResources = s.thenRemove
		}
		for _, glob := range req.GetResourceNamesSubscribe() {
			select {
			case s.subscribed <- glob:
			default:
			}
			dir, ok := strings.CutSuffix(glob, "*")
			if !ok {
				continue
			}
			for name, m := range s.members {
				if rest, ok := strings.CutPrefix(name, dir); ok && !strings.Contains(rest, "/") {
					a, err := anypb.New(m)
					if err != nil {
						return err
					}
					resp.Resources = append(resp.Resources, &discoverypb.Resource{Name: name, Version: "1", Resource: a})
				}
			}
		}
		if len(resp.Resources) == 0 && len(resp.RemovedResources) == 0 {
			continue // an ACK, with nothing to add or remove
		}
		slices.SortFunc(resp.Resources, func(a, b *discoverypb.Resource) int { return strings.Compare(a.Name, b.Name) })
		nonce++
		resp.Nonce = strconv.Itoa(nonce)
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

// serve starts s on loopback; stop ends it and waits for it to end.
func (s *globServer) serve() (addr string, stop func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	gs := grpc.NewServer()
	discoverypb.RegisterAggregatedDiscoveryServiceServer(gs, s)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	return lis.Addr().String(), func() {
		gs.Stop()
		<-served
	}
}
