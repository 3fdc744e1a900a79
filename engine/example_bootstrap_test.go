package engine_test

import (
	"fmt"

	"github.com/xdsengine/xdsengine/engine"
)

func ExampleParseBootstrap() {
	b, err := engine.ParseBootstrap([]byte(`{
		"xds_servers": [{
			"server_uri": "xds.example.com:443",
			"channel_creds": [{"type": "google_default"}, {"type": "tls", "config": {"ca_certificate_file": "/etc/ca.pem"}}],
			"server_features": ["xds_v3", "fail_on_data_errors"]
		}],
		"node": {"id": "projects/1/nodes/n1", "locality": {"zone": "us-east1-b"}},
		"authorities": {
			"other.example": {"fallback_on_reachability_only": true}
		}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	s := b.Servers[0]
	fmt.Println("server:", s.URI, "features:", s.ServerFeatures)
	for _, c := range s.ChannelCreds {
		fmt.Printf("creds: %s config=%s\n", c.Type, c.Config)
	}
	fmt.Println("node:", b.Node.ID, b.Node.Locality.Zone)
	fmt.Println("other.example falls back on reachability only:", b.Authorities["other.example"].FallbackOnReachabilityOnly)

	// Problems are reported with their JSON path.
	_, err = engine.ParseBootstrap([]byte(`{"xds_servers": [{"server_uri": "", "channel_creds": [{"type": "google_default"}]}]}`))
	fmt.Println(err)
	// Output:
	// server: xds.example.com:443 features: [xds_v3 fail_on_data_errors]
	// creds: google_default config=
	// creds: tls config={"ca_certificate_file":"/etc/ca.pem"}
	// node: projects/1/nodes/n1 us-east1-b
	// other.example falls back on reachability only: true
	// bootstrap: xds_servers[0].server_uri: must be a non-empty string
	// bootstrap: xds_servers[0].channel_creds: no supported type: want "insecure" or "tls", got "google_default"
}
