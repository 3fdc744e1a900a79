package engine_test

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// byServer is a transport builder that gives each server URI a memory
// transport of its own.
type byServer map[string]*memTransport

func (b byServer) Build(s bootstrap.ServerConfig, _ transport.Options) (transport.Transport, error) {
	return b[s.URI], nil
}

// BenchmarkSotWWatchToDeliveryDuringPush measures, while responses of
// 10,000 changed clusters keep arriving from a server, how long a Watch of
// a new ClusterLoadAssignment takes to be delivered: from the call until
// its watcher has the resource, which the server sends as soon as it reads
// the request naming it. p50-ns and p99-ns are over the watches.
//
// same-server: the assignment comes from the pushing server, on the same
// ADS stream, so its response waits behind the push being read and
// applied (A88's flow control reads one response at a time): the floor is
// what remains of a push of 10,000 resources. other-server: it comes from
// another server (an authority of its own), whose stream a push on the
// first must not hold back.
func BenchmarkSotWWatchToDeliveryDuringPush(b *testing.B) {
	for _, other := range []bool{false, true} {
		name := "same-server"
		if other {
			name = "other-server"
		}
		b.Run(name, func(b *testing.B) { benchWatchToDelivery(b, other) })
	}
}

func benchWatchToDelivery(b *testing.B, otherServer bool) {
	const n, authority = 10000, "other.example"
	transports := byServer{"pusher": {streams: make(chan *memStream, 1)}, "other": {streams: make(chan *memStream, 1)}}
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("pusher")}, Node: bootstrap.Node{ID: "bench"},
			Authorities: map[string]bootstrap.Authority{authority: {Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("other")}}}},
		Registry:  registry.MustNew(cds.Type, eds.Type),
		Switches:  &features.Switches{},
		Transport: transports,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	c := &counter{tb: b}
	w := c.watcher()
	for i := 0; i < n; i++ {
		defer e.Watch(cds.TypeURL, "cluster-"+strconv.Itoa(i), w)()
	}
	pusher := <-transports["pusher"].streams
	pusher.awaitSubscription(b, n)
	versions := [2][]byte{clusterResponse(b, n, n, 0), clusterResponse(b, n, n, 1)}
	c.wg.Add(n)
	pusher.replies <- versions[0]
	c.wg.Wait()

	stop := make(chan struct{})
	var done []chan struct{}
	serve := func(f func()) {
		ch := make(chan struct{})
		done = append(done, ch)
		go func() {
			defer close(ch)
			f()
		}()
	}
	// The pushing server: one version after the other, each once the last
	// is delivered, whatever the requests say.
	var busy time.Duration
	serve(func() {
		for i := 1; ; i++ {
			c.wg.Add(n)
			select {
			case pusher.replies <- versions[i%2]:
			case <-stop:
				c.wg.Add(-n)
				return
			}
			start := time.Now()
			c.wg.Wait()
			busy += time.Since(start)
		}
	})
	// The assignments' server answers each EDS request naming names with
	// their assignments; the pusher's other requests are read and dropped.
	prefix := ""
	if otherServer {
		prefix = "xdstp://" + authority + "/envoy.config.endpoint.v3.ClusterLoadAssignment/"
	}
	answer := func(st *memStream, msg [][]byte) {
		req := &discoverypb.DiscoveryRequest{}
		if err := proto.Unmarshal(bytes.Join(msg, nil), req); err != nil || req.GetTypeUrl() != eds.TypeURL || len(req.GetResourceNames()) == 0 {
			return
		}
		resp := &discoverypb.DiscoveryResponse{TypeUrl: eds.TypeURL, VersionInfo: "v" + req.GetResponseNonce(), Nonce: strconv.Itoa(int(time.Now().UnixNano()))}
		for _, name := range req.GetResourceNames() {
			a, _ := anypb.New(xdstest.ClusterLoadAssignment(name, xdstest.Locality{Zone: "z", Endpoints: []string{"10.0.0.1:80"}}))
			if prefix != "" {
				a, _ = anypb.New(&discoverypb.Resource{Name: name, Resource: a})
			}
			resp.Resources = append(resp.Resources, a)
		}
		raw, _ := proto.Marshal(resp)
		select {
		case st.replies <- raw:
		case <-stop:
		}
	}
	readRequests := func(st *memStream, answers bool) {
		for {
			select {
			case <-stop:
				return
			case msg := <-st.requests:
				if answers {
					answer(st, msg)
				}
			}
		}
	}
	serve(func() { readRequests(pusher, !otherServer) })
	if otherServer {
		serve(func() {
			select {
			case st := <-transports["other"].streams:
				readRequests(st, true)
			case <-stop:
			}
		})
	}

	delivered := make(chan struct{}, 1)
	got := engine.WatcherFuncs{ResourceChanged: func(_ registry.Resource, err error, done func()) {
		defer done()
		if err != nil {
			b.Error(err)
		}
		select {
		case delivered <- struct{}{}:
		default:
		}
	}}
	if otherServer {
		// A watch that stays, so that the other server's stream stays
		// open between the measured ones.
		defer e.Watch(eds.TypeURL, prefix+"anchor", got)()
		<-delivered
	}
	var durations []time.Duration
	b.ResetTimer()
	benchStart := time.Now()
	for i := 0; i < b.N; i++ {
		name := prefix + "extra-" + strconv.Itoa(i)
		start := time.Now()
		cancel := e.Watch(eds.TypeURL, name, got)
		select {
		case <-delivered:
		case <-time.After(30 * time.Second):
			b.Fatalf("%s not delivered", name)
		}
		durations = append(durations, time.Since(start))
		cancel()
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	close(stop)
	for _, ch := range done {
		<-ch
	}
	elapsed := time.Since(benchStart)
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(busy)/float64(elapsed), "push-busy")
}
