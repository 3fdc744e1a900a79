package bootstrap_test

import (
	"errors"
	"fmt"
	"os"
	"reflect"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// ExampleFromEnv reads the bootstrap from the variables gRPC reads, and
// falls back to a configuration of the program's own when neither is set.
func ExampleFromEnv() {
	defer os.Unsetenv(bootstrap.EnvConfig)

	os.Unsetenv(bootstrap.EnvFile)
	os.Unsetenv(bootstrap.EnvConfig)
	if _, err := bootstrap.FromEnv(); errors.Is(err, bootstrap.ErrNotSet) {
		fmt.Println("not set: use a bootstrap of our own")
	}

	os.Setenv(bootstrap.EnvConfig, `{"xds_servers": [{"server_uri": "xds.example.com:443",
		"channel_creds": [{"type": "insecure"}]}], "node": {"id": "n1"}}`)
	bs, err := bootstrap.FromEnv()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(bs.Servers[0].URI, bs.Node.ID)

	// A bad bootstrap names the variable it came from and the field.
	os.Setenv(bootstrap.EnvConfig, `{"xds_servers": [{"server_uri": "xds.example.com:443"}]}`)
	_, err = bootstrap.FromEnv()
	fmt.Println(err)
	// Output:
	// not set: use a bootstrap of our own
	// xds.example.com:443 n1
	// GRPC_XDS_BOOTSTRAP_CONFIG: bootstrap: xds_servers[0].channel_creds: is required
}

// ExampleInsecureServer writes in code the bootstrap of a management
// server on loopback, as tests and the quickstart do: the same servers as
// the JSON gives.
func ExampleInsecureServer() {
	bs := &bootstrap.Bootstrap{
		Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("localhost:18000", "fail_on_data_errors")},
		Node:    bootstrap.Node{ID: "local"},
	}
	parsed, err := bootstrap.Parse([]byte(`{"xds_servers": [{"server_uri": "localhost:18000",
		"channel_creds": [{"type": "insecure"}], "server_features": ["fail_on_data_errors"]}],
		"node": {"id": "local"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	s := bs.Servers[0]
	fmt.Println(s.URI, s.ChannelCreds[0].Type, s.ServerFeatures)
	fmt.Println("same as parsed:", reflect.DeepEqual(bs.Servers, parsed.Servers))
	// Output:
	// localhost:18000 insecure [fail_on_data_errors]
	// same as parsed: true
}
