package bootstrap_test

import (
	"fmt"
	"log"

	"github.com/xdsengine/xdsengine/bootstrap"
)

func ExampleBootstrap_ListenerName() {
	bs, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "xds.example:443", "channel_creds": [{"type": "insecure"}]}],
		"client_default_listener_resource_name_template": "xdstp://mesh.example/envoy.config.listener.v3.Listener/%s",
		"authorities": {"mesh.example": {}, "edge.example": {}}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, target := range []string{"xds:///api.example:443", "xds://edge.example/www"} {
		name, _ := bs.ListenerName(target)
		fmt.Println(name)
	}
	// Output:
	// xdstp://mesh.example/envoy.config.listener.v3.Listener/api.example:443
	// xdstp://edge.example/envoy.config.listener.v3.Listener/www
}
