package xdsgrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/xds"

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
// beneath it), a channel through grpc-go's own xDS client, and
// "envelope", the least an ADS client does (runEnvelopeClient). Pushes
// go to them in blocks of ten, in turn. x-grpc-go-cpu is xdsgrpc's CPU
// per push over grpc-go's, x-envelope-cpu over the envelope client's.
func BenchmarkUnchangedPush(b *testing.B) {
	config := pushConfiguration()
	type pushed struct {
		kind      string
		srv       *xdstest.Server
		client    *pushClient
		cpu, wall time.Duration
		pushes    int
	}
	var clients []*pushed
	for _, kind := range []string{"xdsgrpc", "grpc-go", "envelope"} {
		srv := xdstest.NewServer(b, xdstest.Options{Name: kind})
		srv.Set(config...)
		c, err := startPushClient(kind, srv.Bootstrap(xdstest.BootstrapOptions{NodeID: kind}))
		if err != nil {
			b.Fatal(err)
		}
		defer c.close()
		if err := allACKed(srv); err != nil {
			b.Fatal(err)
		}
		clients = append(clients, &pushed{kind: kind, srv: srv, client: c})
	}

	const block = 10
	push := func(p *pushed) {
		cpu0, err := p.client.cpu()
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
		cpu1, err := p.client.cpu()
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
	b.ReportMetric(cpu["xdsgrpc"]/cpu["envelope"], "x-envelope-cpu")
	b.ReportMetric(cpu["envelope"]/cpu["grpc-go"], "envelope-x-grpc-go-cpu")
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

// pushClient is the parent's end of a child process that holds one
// client.
type pushClient struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	once sync.Once
}

func startPushClient(kind string, bootstrap []byte) (*pushClient, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), pushClientEnv+"="+kind, pushBootstrapEnv+"="+string(bootstrap))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &pushClient{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	if _, err := c.read(); err != nil {
		c.close()
		return nil, fmt.Errorf("client %s: %v", kind, err)
	}
	return c, nil
}

func (c *pushClient) read() ([]string, error) {
	if !c.out.Scan() {
		return nil, fmt.Errorf("the client's process ended: %v", c.out.Err())
	}
	f := strings.Fields(c.out.Text())
	if len(f) == 0 || f[0] != "ok" {
		return nil, fmt.Errorf("the client's process: %s", c.out.Text())
	}
	return f[1:], nil
}

// cpu returns the CPU time the client's process has used.
func (c *pushClient) cpu() (time.Duration, error) {
	if _, err := fmt.Fprintln(c.in, "cpu"); err != nil {
		return 0, err
	}
	f, err := c.read()
	if err != nil {
		return 0, err
	}
	if len(f) != 1 {
		return 0, fmt.Errorf("the client's process: CPU time %q", f)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns), err
}

func (c *pushClient) close() {
	c.once.Do(func() {
		c.in.Close() // the child closes its client and exits at the end of its input
		_ = c.cmd.Wait()
	})
}

// runPushClient is the child: a channel to xds:///svc through the client
// of the kind named ("xdsgrpc" or "grpc-go") on the bootstrap in the
// environment. It replies "ok" once the channel has its configuration
// (every cluster's endpoints unhealthy: TRANSIENT_FAILURE), then "ok NS"
// to each line "cpu", NS the process's CPU time in nanoseconds.
func runPushClient(kind string, bootstrap []byte, in io.Reader, out io.Writer) error {
	var cc *grpc.ClientConn
	creds := grpc.WithTransportCredentials(insecure.NewCredentials())
	switch kind {
	case "xdsgrpc":
		e, err := startEngine(bootstrap, nil)
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
		r, err := xds.NewXDSResolverWithConfigForTesting(bootstrap)
		if err != nil {
			return err
		}
		if cc, err = grpc.NewClient("xds:///svc", grpc.WithResolvers(r), creds); err != nil {
			return err
		}
	case "envelope":
		return runEnvelopeClient(bootstrap, in, out)
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
	fmt.Fprintln(out, "ok")
	return answerCPU(in, out)
}

// answerCPU replies "ok NS" to each line "cpu" of in, NS the process's
// CPU time in nanoseconds, until in ends.
func answerCPU(in io.Reader, out io.Writer) error {
	cmds := bufio.NewScanner(in)
	for cmds.Scan() {
		if cmds.Text() != "cpu" {
			fmt.Fprintf(out, "error: unknown command %q\n", cmds.Text())
			continue
		}
		t, ok := processCPU()
		if !ok {
			fmt.Fprintln(out, "error: no process CPU time on this platform")
			continue
		}
		fmt.Fprintln(out, "ok", t.Nanoseconds())
	}
	return cmds.Err()
}

// runEnvelopeClient is the least an ADS client does: it subscribes to
// what the channels subscribe to, reads each response's envelope
// (proto.Unmarshal of the DiscoveryResponse, every resource's bytes
// copied, none decoded) and ACKs it. It runs until in ends, answering
// "cpu" as runPushClient does.
func runEnvelopeClient(bs []byte, in io.Reader, out io.Writer) error {
	var parsed struct {
		Servers []struct {
			URI string `json:"server_uri"`
		} `json:"xds_servers"`
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
	}
	if err := json.Unmarshal(bs, &parsed); err != nil || len(parsed.Servers) == 0 {
		return fmt.Errorf("bootstrap: %v", err)
	}
	cc, err := grpc.NewClient(parsed.Servers[0].URI, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ads, err := discoverypb.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		return err
	}
	clusters, assignments := make([]string, pushClusters), make([]string, pushClusters)
	for i := range pushClusters {
		clusters[i] = "c" + strconv.Itoa(i)
		assignments[i] = clusters[i] + "-eds"
	}
	names := map[string][]string{resource.ListenerType: {"svc"}, resource.RouteType: {"route"},
		resource.ClusterType: clusters, resource.EndpointType: assignments}
	node := &corepb.Node{Id: parsed.Node.ID}
	for _, typeURL := range []string{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType} {
		if err := ads.Send(&discoverypb.DiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNames: names[typeURL]}); err != nil {
			return err
		}
		node = nil
	}
	errc := make(chan error, 1)
	go func() {
		for {
			resp, err := ads.Recv()
			if err != nil {
				errc <- err
				return
			}
			if err := ads.Send(&discoverypb.DiscoveryRequest{TypeUrl: resp.TypeUrl, VersionInfo: resp.VersionInfo,
				ResponseNonce: resp.Nonce, ResourceNames: names[resp.TypeUrl]}); err != nil {
				errc <- err
				return
			}
		}
	}()
	fmt.Fprintln(out, "ok")
	err = answerCPU(in, out)
	cancel()
	<-errc
	return err
}
