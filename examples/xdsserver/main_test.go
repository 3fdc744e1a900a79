package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestXdsServer runs the example as `go run` would and checks its story:
// the Listener named from the bootstrap, each chain with its TLS, RBAC and
// routes, the chains connections get, and the NACK of a Listener naming
// an unknown certificate provider.
func TestXdsServer(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	for _, want := range []string{
		`listening on 0.0.0.0:50051: watching Listener "xds.istio.io/grpc/lds/inbound/0.0.0.0:50051"`,
		`tls: mutual TLS, certificate from provider "default", client certificates required, checked with CA from "default"`,
		`rbac "envoy.filters.http.rbac": ALLOW "echo-clients" when path starts with "/echo.Echo/" by peer "spiffe://cluster.local/ns/default/sa/echo-client"`,
		"routes (RDS public-routes): all [*]: 1 route → legacy-backend",
		"warning: virtual_hosts[0].routes[0]: action is cluster, not non_forwarding_action",
		`connection from 127.0.0.1:40001 gets chain "node"`,
		`connection from 10.4.0.2:40002 gets chain "mesh"`,
		`connection from 198.51.100.23:40003 gets chain "public"`,
		`update rejected: Listener resource "xds.istio.io/grpc/lds/inbound/0.0.0.0:50051": invalid resource: default_filter_chain.transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance.instance_name: unrecognized certificate provider instance name "vault"`,
		`still serving: server 0.0.0.0:50051: chain[0] "mesh" (mTLS) inline routes; chain[1] "node" (plaintext) inline routes; default "public" (TLS) RDS public-routes`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
