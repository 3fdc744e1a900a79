package transport_test

import (
	"fmt"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/cds"
)

// The default transport is a ServerChecker: New reads the credential files
// a bootstrap names and reports those it cannot use, instead of returning
// an engine that can never connect.
func ExampleServerChecker() {
	b, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{
			"server_uri": "istiod.istio-system.svc:15012",
			"channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "/nonexistent/root-cert.pem"}}],
			"call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": "/nonexistent/istio-token"}}]
		}]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = engine.New(engine.Config{Bootstrap: b, Registry: registry.MustNew(cds.Type)})
	fmt.Println(err)

	// A transport of one's own may check too, or not.
	_, isChecker := transport.GRPC().(transport.ServerChecker)
	fmt.Println("transport.GRPC checks servers:", isChecker)
	// Output:
	// engine: bootstrap xds_servers[0].channel_creds[0].config.ca_certificate_file: open /nonexistent/root-cert.pem: no such file or directory
	// engine: bootstrap xds_servers[0].call_creds[0].config.jwt_token_file: open /nonexistent/istio-token: no such file or directory
	// transport.GRPC checks servers: true
}
