package bootstrap_test

import (
	"fmt"
	"log"

	"github.com/xdsengine/xdsengine/bootstrap"
)

func ExampleBootstrap_ServerListenerName() {
	bs, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "istiod.istio-system.svc:15010", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "sidecar~10.0.0.7~payments-7d9.default~default.svc.cluster.local"},
		"server_listener_resource_name_template": "xds.istio.io/grpc/lds/inbound/%s"
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, addr := range []string{"0.0.0.0:50051", "[::]:50051"} {
		name, err := bs.ServerListenerName(addr)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(name)
	}
	// Output:
	// xds.istio.io/grpc/lds/inbound/0.0.0.0:50051
	// xds.istio.io/grpc/lds/inbound/[::]:50051
}
