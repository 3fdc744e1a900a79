package bootstrap_test

import (
	"fmt"

	"github.com/xdsengine/xdsengine/bootstrap"
)

func ExampleParse() {
	b, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{
			"server_uri": "xds.example.com:443",
			"channel_creds": [{"type": "google_default"}, {"type": "tls", "config": {"ca_certificate_file": "/etc/ca.pem"}}],
			"call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": "/var/run/secrets/token"}}],
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
		fmt.Printf("channel creds: %s config=%s\n", c.Type, c.Config)
	}
	for _, c := range s.CallCreds {
		fmt.Printf("call creds: %s config=%s\n", c.Type, c.Config)
	}
	fmt.Println("node:", b.Node.ID, b.Node.Locality.Zone)
	fmt.Println("other.example falls back on reachability only:", b.Authorities["other.example"].FallbackOnReachabilityOnly)

	// Problems are reported with their JSON path.
	_, err = bootstrap.Parse([]byte(`{"xds_servers": [{
		"server_uri": "",
		"channel_creds": [{"type": "xds"}, {"type": "tls", "config": {"certificate_file": "/etc/cert.pem", "refresh_interval": 600}}],
		"call_creds": [{"type": "jwt_token_file", "config": {}}]
	}]}`))
	fmt.Println(err)
	// Output:
	// server: xds.example.com:443 features: [xds_v3 fail_on_data_errors]
	// channel creds: google_default config=
	// channel creds: tls config={"ca_certificate_file":"/etc/ca.pem"}
	// call creds: jwt_token_file config={"jwt_token_file":"/var/run/secrets/token"}
	// node: projects/1/nodes/n1 us-east1-b
	// other.example falls back on reachability only: true
	// bootstrap: xds_servers[0].server_uri: must be a non-empty string
	// bootstrap: xds_servers[0].channel_creds[1].config.refresh_interval: want a protobuf JSON Duration string such as "600s", got 600
	// bootstrap: xds_servers[0].channel_creds[1].config.private_key_file: is required with certificate_file
	// bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: is required
}
