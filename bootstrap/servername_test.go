package bootstrap_test

import (
	"strings"
	"testing"

	"github.com/xdsengine/xdsengine/bootstrap"
)

func TestServerListenerName(t *testing.T) {
	const (
		grpcGo = "grpc/server?xds.resource.listening_address=%s"
		istio  = "xds.istio.io/grpc/lds/inbound/%s"
		xdstp  = "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/server/%s"
	)
	for _, c := range []struct {
		name, template, addr string
		want                 string
		wantErr              string
	}{
		{name: "IPv4", template: grpcGo, addr: "0.0.0.0:8080", want: "grpc/server?xds.resource.listening_address=0.0.0.0:8080"},
		// gRFC A36's own example: no escaping for an old-style template.
		{name: "IPv6 in brackets", template: grpcGo, addr: "[::]:80", want: "grpc/server?xds.resource.listening_address=[::]:80"},
		{name: "IPv6 made canonical", template: istio, addr: "[0:0::0:1]:0443", want: "xds.istio.io/grpc/lds/inbound/[::1]:443"},
		{name: "IPv4-mapped IPv6 as Go prints it", template: istio, addr: "[::ffff:10.0.0.1]:50051", want: "xds.istio.io/grpc/lds/inbound/10.0.0.1:50051"},
		{name: "zone kept", template: istio, addr: "[fe80::1%eth0]:80", want: "xds.istio.io/grpc/lds/inbound/[fe80::1%eth0]:80"},
		{name: "host name kept", template: istio, addr: "localhost:80", want: "xds.istio.io/grpc/lds/inbound/localhost:80"},
		{name: "every %s replaced", template: "%s/%s", addr: "10.0.0.1:1", want: "10.0.0.1:1/10.0.0.1:1"},
		{name: "no %s", template: "fixed", addr: "10.0.0.1:1", want: "fixed"},
		// gRFC A47: the address is percent-encoded in an xdstp:// name,
		// as grpc-go's PopulateResourceTemplate and C-core do.
		{name: "xdstp IPv6 encoded", template: xdstp, addr: "[::]:8080", want: "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/server/%5B::%5D:8080"},
		{name: "xdstp IPv4", template: xdstp, addr: "10.1.2.3:50051", want: "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/server/10.1.2.3:50051"},
		{name: "no template", addr: "0.0.0.0:8080", wantErr: "no server_listener_resource_name_template"},
		{name: "no port", template: grpcGo, addr: "0.0.0.0", wantErr: `listening address "0.0.0.0"`},
		{name: "port out of range", template: grpcGo, addr: "0.0.0.0:65536", wantErr: `port "65536" is not a number in [0, 65535]`},
		{name: "named port", template: grpcGo, addr: "0.0.0.0:http", wantErr: `port "http"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &bootstrap.Bootstrap{ServerListenerResourceNameTemplate: c.template}
			got, err := b.ServerListenerName(c.addr)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ServerListenerName(%q) = %q, %v; want an error containing %q", c.addr, got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("ServerListenerName(%q) = %q, %v; want %q", c.addr, got, err, c.want)
			}
		})
	}
}
