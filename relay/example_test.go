package relay_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/csds"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/lastgood"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// Example relays a go-control-plane server to a client of the relay.
func Example() {
	// The upstream: a management server with one cluster.
	up, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer up.Close()
	up.Set(xdstest.R("backend", xdstest.Cluster("backend", "backend-eds")))
	bs, err := bootstrap.Parse(up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"}))
	if err != nil {
		log.Fatal(err)
	}

	// The relay, served by go-control-plane's server on loopback.
	r, err := relay.New(relay.Config{Upstream: engine.Config{Bootstrap: bs, Registry: builtin.Registry()}})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := grpc.NewServer()
	r.Register(ctx, s, nil)
	served := make(chan struct{})
	go func() { defer close(served); s.Serve(lis) }()
	defer func() { s.Stop(); <-served }()

	// A client of the relay, in cluster "blue", which is its key.
	cbs, err := bootstrap.Parse(fmt.Appendf(nil, `{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "client-1", "cluster": "blue"}}`, lis.Addr()))
	if err != nil {
		log.Fatal(err)
	}
	c, err := engine.New(engine.Config{Bootstrap: cbs, Registry: builtin.Registry()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	got := make(chan string, 1)
	defer cds.Watch(c, "backend", engine.TypedWatcherFuncs[*cds.Cluster]{
		ResourceChanged: func(cl *cds.Cluster, err error, done func()) {
			if err == nil {
				got <- cl.EDSName()
			}
			done()
		},
	})()
	fmt.Println("the client got a cluster of endpoints", <-got)
	for _, k := range r.Status() {
		fmt.Printf("key %q: upstream node %s, %d watch\n", k.Key, k.NodeID, k.Watches)
	}
	// Output:
	// the client got a cluster of endpoints backend-eds
	// key "blue": upstream node relay, 1 watch
}

// ExampleRelay_ClientConfigs serves CSDS of the relay's engines: a Relay
// is a csds.Source.
func ExampleRelay_ClientConfigs() {
	bs := &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("xds.example.com:443")}}
	r, err := relay.New(relay.Config{Upstream: engine.Config{Bootstrap: bs, Registry: builtin.Registry()}})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	admin := grpc.NewServer()
	csds.Register(admin, r)
	fmt.Println(len(r.ClientConfigs()), "engines before the first client")
	// Output: 0 engines before the first client
}

// ExampleParseAggregation keys clients by a metadata field, as xdsrelay's
// --key=metadata:team does.
func ExampleParseAggregation() {
	agg, err := relay.ParseAggregation("metadata:team")
	if err != nil {
		log.Fatal(err)
	}
	md, _ := structpb.NewStruct(map[string]any{"team": "payments"})
	key, err := agg.Key(&corepb.Node{Id: "pod-1", Metadata: md})
	if err != nil {
		log.Fatal(err)
	}
	upstream := agg.Node(key, bootstrap.Node{ID: "relay-1"})
	fmt.Println(key, upstream.ID, upstream.Metadata.GetFields()["team"].GetStringValue())
	// Output: payments relay-1 payments
}

// ExampleByCluster shows the default key, and the node the key's engine
// presents upstream.
func ExampleByCluster() {
	agg := relay.ByCluster()
	key, _ := agg.Key(&corepb.Node{Id: "pod-1", Cluster: "frontend"})
	fmt.Printf("%+v\n", agg.Node(key, bootstrap.Node{ID: "relay-1", Cluster: "relays"}))
	// Output: {ID:relay-1 Cluster:frontend Locality:{Region: Zone: SubZone:} Metadata:<nil>}
}

// ExampleByID keys clients by node ID: the relay presents each client's ID
// upstream, for servers that vary their configuration by node ID.
func ExampleByID() {
	agg := relay.ByID()
	key, _ := agg.Key(&corepb.Node{Id: "sidecar~10.0.0.1~pod-1.ns~ns.svc.cluster.local", Cluster: "frontend"})
	fmt.Println(agg.Node(key, bootstrap.Node{ID: "relay-1"}).ID)
	// Output: sidecar~10.0.0.1~pod-1.ns~ns.svc.cluster.local
}

// ExampleByMetadata refuses a client without the field.
func ExampleByMetadata() {
	_, err := relay.ByMetadata("team").Key(&corepb.Node{Id: "pod-1"})
	fmt.Println(err)
	// Output: rpc error: code = InvalidArgument desc = node "pod-1": metadata has no field "team", which this relay's aggregation key needs
}

// payload is a custom resource type's decoded value that keeps its bytes
// under another name than RawResource's Raw.
type payload struct{ wire []byte }

// ExampleEncoderFunc serves a custom type's resources, falling back to
// the default encoder for the others.
func ExampleEncoderFunc() {
	enc := relay.EncoderFunc(func(typeURL string, r registry.Resource) ([]byte, error) {
		if p, ok := r.(*payload); ok {
			return p.wire, nil
		}
		return relay.DefaultEncoder().Encode(typeURL, r)
	})
	b, err := enc.Encode("type.googleapis.com/acme.v1.Payload", &payload{wire: []byte{0x0a, 0x01, 'x'}})
	fmt.Println(b, err)
	// Output: [10 1 120] <nil>
}

// ExampleDefaultEncoder serves a built-in type's resource as the
// deterministic serialization of its message.
func ExampleDefaultEncoder() {
	raw, _ := relay.DefaultEncoder().Encode(cds.TypeURL, xdstest.Cluster("backend", "backend-eds"))
	decoded, err := cds.Type.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(decoded.Name, decoded.Resource.(*cds.Cluster).EDSName())
	// Output: backend backend-eds
}

// ExampleStoreDir keeps each key's last good configuration in a file of
// a directory, named after the key.
func ExampleStoreDir() {
	dir, err := os.MkdirTemp("", "relay-store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := relay.Config{Store: relay.StoreDir(dir, lastgood.Options{})}

	// The relay opens a key's store with its engine; the engine closes it.
	s, err := cfg.Store("blue/east")
	if err != nil {
		log.Fatal(err)
	}
	s.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.lastgood"))
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}
	// Output: key=blue%2Feast.lastgood
}
