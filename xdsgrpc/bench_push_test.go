package xdsgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/internal/testutil/helperproc"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/xdsgrpc"
	"github.com/xdsengine/xdsengine/xdstest"
)

// pushClusters is how many clusters the pushed configuration routes to.
const pushClusters = 1000

// BenchmarkUnchangedPush is the CPU a client spends on a push that
// changes nothing: the management server (go-control-plane's
// SnapshotCache, in this process) sends its whole configuration again
// under a new version, every type re-sent: one Listener, one
// RouteConfiguration of 1,000 routes, 1,000 Clusters and their 1,000
// ClusterLoadAssignments of three endpoints each. A push ends when the
// server has the client's ACK of every type. Each client runs in a child
// process of its own, so that its CPU time (getrusage) and its heap are
// its own, on a server of its own: a channel through xdsgrpc (an engine
// beneath it), a channel through grpc-go's own xDS client, and "floor",
// the least an ADS client does (runFloorClient). Pushes go to them in
// blocks of ten, in turn. x-grpc-go-cpu is xdsgrpc's CPU per push over
// grpc-go's, x-floor-cpu over the floor's.
func BenchmarkUnchangedPush(b *testing.B) {
	config := pushConfiguration()
	type pushed struct {
		kind      string
		srv       *xdstest.Server
		client    *helperproc.Process
		cpu, wall time.Duration
		pushes    int
	}
	var clients []*pushed
	for _, kind := range []string{"xdsgrpc", "grpc-go", "floor"} {
		srv := xdstest.NewServer(b, xdstest.Options{Name: kind})
		srv.Set(config...)
		c, err := startPushClient(kind, srv.Bootstrap(xdstest.BootstrapOptions{NodeID: kind}))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := allACKed(srv); err != nil {
			b.Fatal(err)
		}
		clients = append(clients, &pushed{kind: kind, srv: srv, client: c})
	}

	const block = 10
	push := func(p *pushed) {
		cpu0, err := childCPU(p.client)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for range block {
			p.srv.Set(config...)
			if err := allACKed(p.srv); err != nil {
				b.Fatal(err)
			}
		}
		p.wall += time.Since(t0)
		cpu1, err := childCPU(p.client)
		if err != nil {
			b.Fatal(err)
		}
		p.cpu += cpu1 - cpu0
		p.pushes += block
	}
	for _, p := range clients { // warm each before measuring
		push(p)
		p.cpu, p.wall, p.pushes = 0, 0, 0
	}
	b.ResetTimer()
	for b.Loop() {
		for _, p := range clients {
			push(p)
		}
	}
	b.StopTimer()
	cpu := make(map[string]float64)
	for _, p := range clients {
		cpu[p.kind] = float64(p.cpu.Nanoseconds()) / float64(p.pushes)
		b.ReportMetric(cpu[p.kind], p.kind+"-cpu-ns/push")
		b.ReportMetric(float64(p.wall.Nanoseconds())/float64(p.pushes), p.kind+"-ns/push")
	}
	b.ReportMetric(cpu["xdsgrpc"]/cpu["grpc-go"], "x-grpc-go-cpu")
	b.ReportMetric(cpu["xdsgrpc"]/cpu["floor"], "x-floor-cpu")
	b.ReportMetric(cpu["floor"]/cpu["grpc-go"], "floor-x-grpc-go-cpu")
}

// pushConfiguration is the pushed configuration: Listener "svc" whose
// routes send /c<i>/ to cluster c<i>, each cluster's three endpoints
// unhealthy (reserved addresses, never dialed), so that nothing in a
// channel connects or retries between pushes.
func pushConfiguration() []xdstest.Resource {
	var rest = make([]xdstest.Resource, 0, 2*pushClusters)
	rc := routeConfig()
	for i := range pushClusters {
		name := "c" + strconv.Itoa(i)
		rc.VirtualHosts[0].Routes = append(rc.VirtualHosts[0].Routes, toCluster(prefix("/"+name+"/"), name))
		eps := make([]string, 3)
		for j := range eps {
			eps[j] = fmt.Sprintf("192.0.2.%d:%d", j+1, 10000+i)
		}
		rest = append(rest, cluster(name), endpointsWith(name, setHealth(0, corepb.HealthStatus_UNHEALTHY),
			xdstest.Locality{Zone: "z", Endpoints: eps}))
	}
	return basic(rc, rest...)
}

// allACKed waits until the client of srv has ACKed its current version
// of every type.
func allACKed(srv *xdstest.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, typeURL := range []string{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType} {
		if _, err := srv.WaitForRequest(ctx, xdstest.IsACK(typeURL, srv.Version())); err != nil {
			return err
		}
	}
	return nil
}

const (
	pushClientEnv    = "XDSENGINE_XDSGRPC_PUSH_CLIENT"
	pushBootstrapEnv = "XDSENGINE_XDSGRPC_PUSH_BOOTSTRAP"
)

// startPushClient starts the child process of a client of the kind
// named on the bootstrap bs; it returns once the client is ready.
func startPushClient(kind string, bs []byte) (*helperproc.Process, error) {
	p, _, err := helperproc.Start(pushClientEnv+"="+kind, pushBootstrapEnv+"="+string(bs))
	if err != nil {
		return nil, fmt.Errorf("client %s: %v", kind, err)
	}
	return p, nil
}

// childCPU returns the CPU time the child process has used.
func childCPU(p *helperproc.Process) (time.Duration, error) {
	f, err := p.Do("cpu")
	if err != nil {
		return 0, err
	}
	if len(f) != 1 {
		return 0, fmt.Errorf("the client's process: CPU time %q", f)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns), err
}

// runPushClient is the child: a channel to xds:///svc through the client
// of the kind named ("xdsgrpc" or "grpc-go"), or the floor client, on the
// bootstrap bs. It replies "ok" once the channel has its configuration
// (every cluster's endpoints unhealthy: TRANSIENT_FAILURE), then "ok NS"
// to each line "cpu", NS the process's CPU time in nanoseconds
// (answerCPU).
func runPushClient(kind string, bs []byte, in io.Reader, out io.Writer) error {
	var cc *grpc.ClientConn
	creds := grpc.WithTransportCredentials(insecure.NewCredentials())
	switch kind {
	case "xdsgrpc":
		e, err := startEngine(bs, nil)
		if err != nil {
			return err
		}
		defer e.Close()
		bld, err := xdsgrpc.NewBuilder(xdsgrpc.Options{Source: e})
		if err != nil {
			return err
		}
		defer bld.Close()
		if cc, err = bld.NewClient("xdsengine:///svc", creds); err != nil {
			return err
		}
	case "grpc-go":
		r, err := xds.NewXDSResolverWithConfigForTesting(bs)
		if err != nil {
			return err
		}
		if cc, err = grpc.NewClient("xds:///svc", grpc.WithResolvers(r), creds); err != nil {
			return err
		}
	case "floor":
		return runFloorClient(bs, in, out)
	default:
		return fmt.Errorf("no client %q", kind)
	}
	defer cc.Close()
	cc.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for s := cc.GetState(); s != connectivity.TransientFailure; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			return fmt.Errorf("channel %v, want TRANSIENT_FAILURE", s)
		}
	}
	return helperproc.Serve(in, out, nil, answerCPU)
}

// answerCPU answers "cpu" with the process's CPU time in nanoseconds.
func answerCPU(f []string) (string, error) {
	if f[0] != "cpu" {
		return "", fmt.Errorf("unknown command %q", f[0])
	}
	t, ok := processCPU()
	if !ok {
		return "", errors.New("no process CPU time on this platform")
	}
	return strconv.FormatInt(t.Nanoseconds(), 10), nil
}

// runFloorClient is the least an ADS client does on this push: over
// the engine's gRPC transport it subscribes to what the channels
// subscribe to, reads of each response only its type, version and nonce
// (no resource is looked at), and ACKs it with a request whose names it
// encoded once. It runs until in ends, answering "cpu" as runPushClient
// does.
func runFloorClient(bs []byte, in io.Reader, out io.Writer) error {
	parsed, err := bootstrap.Parse(bs)
	if err != nil {
		return err
	}
	tr, err := transport.GRPC().Build(parsed.Servers[0], transport.Options{})
	if err != nil {
		return err
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ads, err := tr.NewStream(ctx, "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources")
	if err != nil {
		return err
	}
	// subscription is a type's request without version and nonce:
	// protobuf fields may come in any order, so an ACK is these bytes
	// followed by the two.
	subscription := map[string][]byte{}
	node := &corepb.Node{Id: parsed.Node.ID}
	for _, typeURL := range []string{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType} {
		req := &discoverypb.DiscoveryRequest{TypeUrl: typeURL}
		switch typeURL {
		case resource.ListenerType:
			req.ResourceNames = []string{"svc"}
		case resource.RouteType:
			req.ResourceNames = []string{"route"}
		default:
			for i := range pushClusters {
				name := "c" + strconv.Itoa(i)
				if typeURL == resource.EndpointType {
					name += "-eds"
				}
				req.ResourceNames = append(req.ResourceNames, name)
			}
		}
		if subscription[typeURL], err = proto.Marshal(req); err != nil {
			return err
		}
		req.Node, node = node, nil // the stream's first request names the node
		first, err := proto.Marshal(req)
		if err != nil {
			return err
		}
		if err := ads.Send(first); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go func() {
		for {
			b, err := ads.Recv()
			if err != nil {
				errc <- err
				return
			}
			var typeURL, version, nonce []byte
			for len(b) > 0 {
				num, typ, n := protowire.ConsumeTag(b)
				if n < 0 {
					errc <- protowire.ParseError(n)
					return
				}
				b = b[n:]
				var v []byte
				if typ == protowire.BytesType {
					v, n = protowire.ConsumeBytes(b)
				} else {
					n = protowire.ConsumeFieldValue(num, typ, b)
				}
				if n < 0 {
					errc <- protowire.ParseError(n)
					return
				}
				b = b[n:]
				switch num {
				case 1:
					version = v
				case 4:
					typeURL = v
				case 5:
					nonce = v
				}
			}
			ack := slices.Clip(subscription[string(typeURL)])
			ack = protowire.AppendBytes(protowire.AppendTag(ack, 1, protowire.BytesType), version)
			ack = protowire.AppendBytes(protowire.AppendTag(ack, 5, protowire.BytesType), nonce)
			if err := ads.Send(ack); err != nil {
				errc <- err
				return
			}
		}
	}()
	err = helperproc.Serve(in, out, nil, answerCPU)
	cancel()
	<-errc
	return err
}
