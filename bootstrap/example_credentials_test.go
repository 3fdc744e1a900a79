package bootstrap_test

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/credentials"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/registry"
)

// apiKey sends a fixed API key with every call.
type apiKey string

func (k apiKey) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"x-api-key": string(k)}, nil
}

func (apiKey) RequireTransportSecurity() bool { return false }

// ExampleCredentials_WithCallCreds adds a call credentials type of the
// program's own, "api_key" with config {"key": "..."}, to the types gRPC
// knows. The same value goes to the engine's transport
// (transport.GRPCWithCredentials); nothing is registered globally.
func ExampleCredentials_WithCallCreds() {
	creds := bootstrap.DefaultCredentials().WithCallCreds(bootstrap.CallCredsType{
		Name: "api_key",
		// Validate names each problem by its field inside "config", as
		// the built-in types do.
		Validate: func(config json.RawMessage) []*registry.FieldError {
			var c struct {
				Key string `json:"key"`
			}
			if len(config) > 0 {
				if err := json.Unmarshal(config, &c); err != nil {
					return []*registry.FieldError{{Rule: "want an object with a string \"key\"", Err: err}}
				}
			}
			if c.Key == "" {
				return []*registry.FieldError{{Field: "key", Rule: "is required"}}
			}
			return nil
		},
		Build: func(config json.RawMessage) (credentials.PerRPCCredentials, error) {
			var c struct{ Key string }
			err := json.Unmarshal(config, &c)
			return apiKey(c.Key), err
		},
	})
	p := bootstrap.Parser{Credentials: creds}

	_, err := p.Parse([]byte(`{"xds_servers": [{"server_uri": "xds.example.com:443",
		"channel_creds": [{"type": "insecure"}], "call_creds": [{"type": "api_key", "config": {}}]}]}`))
	fmt.Println(err)

	bs, err := p.Parse([]byte(`{"xds_servers": [{"server_uri": "xds.example.com:443",
		"channel_creds": [{"type": "insecure"}], "call_creds": [{"type": "api_key", "config": {"key": "s3cret"}}]}]}`))
	if err != nil {
		panic(err)
	}
	sc, err := creds.Build(bs.Servers[0])
	if err != nil {
		panic(err)
	}
	defer sc.Close()
	md, _ := sc.PerRPC[0].GetRequestMetadata(context.Background())
	fmt.Println(sc.Transport.Info().SecurityProtocol, md)
	// Output:
	// bootstrap: xds_servers[0].call_creds[0].config.key: is required
	// insecure map[x-api-key:s3cret]
}
