package bootstrap_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// Bootstraps as real deployments write them. Each must mean to this
// library what it means to gRPC: the same servers, credentials (the
// channel credentials in use are the first supported entry), features,
// node, authorities and templates.

// tdBootstrap is what Traffic Director's generator (td-grpc-bootstrap)
// writes with federation on: the DirectPath (c2p) authority with its own
// server, a global authority on the top-level server with an xdstp
// template, and a file_watcher provider for the mesh certificates.
const tdBootstrap = `{
  "xds_servers": [
    {
      "server_uri": "trafficdirector.googleapis.com:443",
      "channel_creds": [{"type": "google_default"}],
      "server_features": ["xds_v3", "ignore_resource_deletion"]
    }
  ],
  "authorities": {
    "traffic-director-c2p.xds.googleapis.com": {
      "xds_servers": [
        {
          "server_uri": "dns:///directpath-pa.googleapis.com",
          "channel_creds": [{"type": "google_default"}],
          "server_features": ["xds_v3", "ignore_resource_deletion"]
        }
      ],
      "client_listener_resource_name_template": "xdstp://traffic-director-c2p.xds.googleapis.com/envoy.config.listener.v3.Listener/%s"
    },
    "traffic-director-global.xds.googleapis.com": {
      "client_listener_resource_name_template": "xdstp://traffic-director-global.xds.googleapis.com/envoy.config.listener.v3.Listener/123456789012345/thedefault/%s"
    }
  },
  "node": {
    "id": "projects/123456789012345/networks/thedefault/nodes/52fdfc07-2182-454f-963f-5f0f9a621d72",
    "cluster": "cluster",
    "metadata": {
      "INSTANCE_IP": "10.9.8.7",
      "TRAFFICDIRECTOR_NETWORK_NAME": "thedefault",
      "TRAFFICDIRECTOR_GCP_PROJECT_NUMBER": "123456789012345",
      "TRAFFICDIRECTOR_DIRECTPATH_C2P_IPV6_CAPABLE": true,
      "TRAFFICDIRECTOR_GRPC_BOOTSTRAP_GENERATOR_SHA": "7202b7c611ebd6d382b7b0240f50e9824200bffd"
    },
    "locality": {"zone": "us-central1-a"}
  },
  "certificate_providers": {
    "google_cloud_private_spiffe": {
      "plugin_name": "file_watcher",
      "config": {
        "certificate_file": "/var/run/gke-spiffe/certs/certificates.pem",
        "private_key_file": "/var/run/gke-spiffe/certs/private_key.pem",
        "ca_certificate_file": "/var/run/gke-spiffe/certs/ca_certificates.pem",
        "refresh_interval": "600s"
      }
    }
  },
  "server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s",
  "client_default_listener_resource_name_template": "xdstp://traffic-director-global.xds.googleapis.com/envoy.config.listener.v3.Listener/123456789012345/thedefault/%s"
}`

// csmBootstrap is the generator's output for Cloud Service Mesh with a
// mesh name (--config-mesh) and GKE deployment information: nested node
// metadata, relative certificate paths.
const csmBootstrap = `{
  "xds_servers": [
    {
      "server_uri": "trafficdirector.googleapis.com:443",
      "channel_creds": [{"type": "google_default"}],
      "server_features": ["xds_v3"]
    }
  ],
  "node": {
    "id": "projects/123456789012345/networks/mesh:testmesh/nodes/52fdfc07-2182-454f-963f-5f0f9a621d72",
    "cluster": "cluster",
    "metadata": {
      "INSTANCE_IP": "10.9.8.7",
      "TRAFFICDIRECTOR_GRPC_BOOTSTRAP_GENERATOR_SHA": "7202b7c611ebd6d382b7b0240f50e9824200bffd",
      "TRAFFIC_DIRECTOR_CLIENT_ENVIRONMENT": {
        "GCE-VM": "test-gce-vm",
        "GCP-ZONE": "uscentral-5",
        "GKE-CLUSTER": "test-gke-cluster",
        "GKE-NAMESPACE": "test-gke-namespace",
        "GKE-POD": "test-gke-pod",
        "INSTANCE-IP": "10.9.8.7"
      }
    },
    "locality": {"zone": "uscentral-5"}
  },
  "certificate_providers": {
    "google_cloud_private_spiffe": {
      "plugin_name": "file_watcher",
      "config": {
        "certificate_file": "certificates.pem",
        "private_key_file": "private_key.pem",
        "ca_certificate_file": "ca_certificates.pem",
        "refresh_interval": "600s"
      }
    }
  },
  "server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s"
}`

// istioAgentBootstrap is what istio-agent writes for a proxyless gRPC
// workload: plaintext to the agent's local socket, which proxies to
// istiod; the agent's own certificates for data plane mTLS. The node
// carries the agent's metadata and a field gRPC does not know.
const istioAgentBootstrap = `{
  "xds_servers": [
    {
      "server_uri": "unix:///etc/istio/proxy/XDS",
      "channel_creds": [{"type": "insecure"}],
      "server_features": ["xds_v3"]
    }
  ],
  "node": {
    "id": "sidecar~10.48.0.17~echo-7d9f8-x2x4k.echo-grpc~echo-grpc.svc.cluster.local",
    "metadata": {
      "ANNOTATIONS": {"inject.istio.io/templates": "grpc-agent", "proxy.istio.io/config": "{\"holdApplicationUntilProxyStarts\": true}"},
      "APP_CONTAINERS": "echo",
      "CLUSTER_ID": "Kubernetes",
      "ENVOY_PROMETHEUS_PORT": 15090,
      "GENERATOR": "grpc",
      "INSTANCE_IPS": "10.48.0.17",
      "INTERCEPTION_MODE": "REDIRECT",
      "ISTIO_PROXY_SHA": "8f5a7b3",
      "ISTIO_VERSION": "1.26.2",
      "LABELS": {"app": "echo", "version": "v1", "service.istio.io/canonical-name": "echo"},
      "MESH_ID": "cluster.local",
      "METADATA_DISCOVERY": "false",
      "NAME": "echo-7d9f8-x2x4k",
      "NAMESPACE": "echo-grpc",
      "NODE_NAME": "gke-node-1",
      "OWNER": "kubernetes://apis/apps/v1/namespaces/echo-grpc/deployments/echo",
      "PILOT_SAN": ["istiod.istio-system.svc"],
      "POD_PORTS": "[{\"containerPort\":7070,\"protocol\":\"TCP\"}]",
      "SERVICE_ACCOUNT": "default",
      "WORKLOAD_NAME": "echo"
    },
    "locality": {},
    "UserAgentVersionType": null
  },
  "certificate_providers": {
    "default": {
      "plugin_name": "file_watcher",
      "config": {
        "certificate_file": "/var/lib/istio/data/cert-chain.pem",
        "private_key_file": "/var/lib/istio/data/key.pem",
        "ca_certificate_file": "/var/lib/istio/data/root-cert.pem",
        "refresh_interval": "900s"
      }
    }
  },
  "server_listener_resource_name_template": "xds.istio.io/grpc/lds/inbound/%s"
}`

// istioDirectBootstrap is the gRFC A97 setup: straight to istiod over TLS
// with istiod's root, authenticated by the workload's projected token.
const istioDirectBootstrap = `{
  "xds_servers": [
    {
      "server_uri": "dns:///istiod.istio-system.svc:15012",
      "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "/var/run/secrets/istio/root-cert.pem"}}],
      "call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": "/var/run/secrets/tokens/istio-token"}}],
      "server_features": ["xds_v3"]
    }
  ],
  "node": {
    "id": "sidecar~127.0.0.1~pod1.fake-namespace~fake-namespace.svc.cluster.local",
    "metadata": {"GENERATOR": "grpc", "INSTANCE_IPS": "127.0.0.1", "ISTIO_VERSION": "1.26.2", "WORKLOAD_IDENTITY_SOCKET_FILE": "socket"},
    "locality": {}
  },
  "server_listener_resource_name_template": "xds.istio.io/grpc/lds/inbound/%s"
}`

// goControlPlaneBootstrap points a gRPC client at go-control-plane's
// example server (internal/example: port 18000, snapshot for node
// "test-id"), with the node its sample Envoy bootstrap uses.
const goControlPlaneBootstrap = `{
  "xds_servers": [{"server_uri": "localhost:18000", "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
  "node": {"id": "test-id", "cluster": "test-cluster"}
}`

// grpcNode is the node of grpc-go's bootstrap tests.
const grpcNode = `"node": {"id": "ENVOY_NODE_ID", "metadata": {"TRAFFICDIRECTOR_GRPC_HOSTNAME": "trafficdirector"}}`

func TestRealWorldBootstraps(t *testing.T) {
	tdServer := func(features ...string) bootstrap.ServerConfig {
		return bootstrap.ServerConfig{URI: "trafficdirector.googleapis.com:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "google_default"}}, ServerFeatures: features}
	}
	grpcTestNode := bootstrap.Node{ID: "ENVOY_NODE_ID", Metadata: bootstrapStruct(t, map[string]any{"TRAFFICDIRECTOR_GRPC_HOSTNAME": "trafficdirector"})}
	insecure := []bootstrap.ChannelCreds{{Type: "insecure"}}

	tests := []struct {
		name string
		in   string
		want *bootstrap.Bootstrap
		// wantChannel is the channel_creds type in use per top-level
		// server.
		wantChannel []string
		// wantCheckErr, when set, is what the default credentials' Check
		// reports for the top-level servers (what an engine's New
		// reports): a file the bootstrap names is missing on this machine.
		wantCheckErr string
	}{
		{
			name: "Traffic Director with federation (td-grpc-bootstrap)",
			in:   tdBootstrap,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{tdServer("xds_v3", "ignore_resource_deletion")},
				Authorities: map[string]bootstrap.Authority{
					"traffic-director-c2p.xds.googleapis.com": {
						Servers: []bootstrap.ServerConfig{{
							URI:            "dns:///directpath-pa.googleapis.com",
							ChannelCreds:   []bootstrap.ChannelCreds{{Type: "google_default"}},
							ServerFeatures: []string{"xds_v3", "ignore_resource_deletion"},
						}},
						ClientListenerResourceNameTemplate: "xdstp://traffic-director-c2p.xds.googleapis.com/envoy.config.listener.v3.Listener/%s",
					},
					"traffic-director-global.xds.googleapis.com": {
						ClientListenerResourceNameTemplate: "xdstp://traffic-director-global.xds.googleapis.com/envoy.config.listener.v3.Listener/123456789012345/thedefault/%s",
					},
				},
				Node: bootstrap.Node{
					ID:       "projects/123456789012345/networks/thedefault/nodes/52fdfc07-2182-454f-963f-5f0f9a621d72",
					Cluster:  "cluster",
					Locality: bootstrap.Locality{Zone: "us-central1-a"},
					Metadata: bootstrapStruct(t, map[string]any{
						"INSTANCE_IP":                                  "10.9.8.7",
						"TRAFFICDIRECTOR_NETWORK_NAME":                 "thedefault",
						"TRAFFICDIRECTOR_GCP_PROJECT_NUMBER":           "123456789012345",
						"TRAFFICDIRECTOR_DIRECTPATH_C2P_IPV6_CAPABLE":  true,
						"TRAFFICDIRECTOR_GRPC_BOOTSTRAP_GENERATOR_SHA": "7202b7c611ebd6d382b7b0240f50e9824200bffd",
					}),
				},
				CertificateProviders: map[string]bootstrap.CertificateProvider{
					"google_cloud_private_spiffe": {PluginName: "file_watcher", Config: json.RawMessage(
						`{"certificate_file":"/var/run/gke-spiffe/certs/certificates.pem","private_key_file":"/var/run/gke-spiffe/certs/private_key.pem","ca_certificate_file":"/var/run/gke-spiffe/certs/ca_certificates.pem","refresh_interval":"600s"}`)},
				},
				ServerListenerResourceNameTemplate:        "grpc/server?xds.resource.listening_address=%s",
				ClientDefaultListenerResourceNameTemplate: "xdstp://traffic-director-global.xds.googleapis.com/envoy.config.listener.v3.Listener/123456789012345/thedefault/%s",
			},
			wantChannel: []string{"google_default"},
		},
		{
			name: "Cloud Service Mesh with a mesh name (td-grpc-bootstrap --config-mesh)",
			in:   csmBootstrap,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{tdServer("xds_v3")},
				Node: bootstrap.Node{
					ID:       "projects/123456789012345/networks/mesh:testmesh/nodes/52fdfc07-2182-454f-963f-5f0f9a621d72",
					Cluster:  "cluster",
					Locality: bootstrap.Locality{Zone: "uscentral-5"},
					Metadata: bootstrapStruct(t, map[string]any{
						"INSTANCE_IP": "10.9.8.7",
						"TRAFFICDIRECTOR_GRPC_BOOTSTRAP_GENERATOR_SHA": "7202b7c611ebd6d382b7b0240f50e9824200bffd",
						"TRAFFIC_DIRECTOR_CLIENT_ENVIRONMENT": map[string]any{
							"GCE-VM": "test-gce-vm", "GCP-ZONE": "uscentral-5", "GKE-CLUSTER": "test-gke-cluster",
							"GKE-NAMESPACE": "test-gke-namespace", "GKE-POD": "test-gke-pod", "INSTANCE-IP": "10.9.8.7",
						},
					}),
				},
				CertificateProviders: map[string]bootstrap.CertificateProvider{
					"google_cloud_private_spiffe": {PluginName: "file_watcher", Config: json.RawMessage(
						`{"certificate_file":"certificates.pem","private_key_file":"private_key.pem","ca_certificate_file":"ca_certificates.pem","refresh_interval":"600s"}`)},
				},
				ServerListenerResourceNameTemplate: "grpc/server?xds.resource.listening_address=%s",
			},
			wantChannel: []string{"google_default"},
		},
		{
			name: "Istio proxyless gRPC (istio-agent)",
			in:   istioAgentBootstrap,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{{URI: "unix:///etc/istio/proxy/XDS", ChannelCreds: insecure, ServerFeatures: []string{"xds_v3"}}},
				Node: bootstrap.Node{
					ID: "sidecar~10.48.0.17~echo-7d9f8-x2x4k.echo-grpc~echo-grpc.svc.cluster.local",
					Metadata: bootstrapStruct(t, map[string]any{
						"ANNOTATIONS":           map[string]any{"inject.istio.io/templates": "grpc-agent", "proxy.istio.io/config": `{"holdApplicationUntilProxyStarts": true}`},
						"APP_CONTAINERS":        "echo",
						"CLUSTER_ID":            "Kubernetes",
						"ENVOY_PROMETHEUS_PORT": 15090,
						"GENERATOR":             "grpc",
						"INSTANCE_IPS":          "10.48.0.17",
						"INTERCEPTION_MODE":     "REDIRECT",
						"ISTIO_PROXY_SHA":       "8f5a7b3",
						"ISTIO_VERSION":         "1.26.2",
						"LABELS":                map[string]any{"app": "echo", "version": "v1", "service.istio.io/canonical-name": "echo"},
						"MESH_ID":               "cluster.local",
						"METADATA_DISCOVERY":    "false",
						"NAME":                  "echo-7d9f8-x2x4k",
						"NAMESPACE":             "echo-grpc",
						"NODE_NAME":             "gke-node-1",
						"OWNER":                 "kubernetes://apis/apps/v1/namespaces/echo-grpc/deployments/echo",
						"PILOT_SAN":             []any{"istiod.istio-system.svc"},
						"POD_PORTS":             `[{"containerPort":7070,"protocol":"TCP"}]`,
						"SERVICE_ACCOUNT":       "default",
						"WORKLOAD_NAME":         "echo",
					}),
				},
				CertificateProviders: map[string]bootstrap.CertificateProvider{
					"default": {PluginName: "file_watcher", Config: json.RawMessage(
						`{"certificate_file":"/var/lib/istio/data/cert-chain.pem","private_key_file":"/var/lib/istio/data/key.pem","ca_certificate_file":"/var/lib/istio/data/root-cert.pem","refresh_interval":"900s"}`)},
				},
				ServerListenerResourceNameTemplate: "xds.istio.io/grpc/lds/inbound/%s",
			},
			wantChannel: []string{"insecure"},
		},
		{
			name: "Istio direct to istiod with TLS and a JWT (gRFC A97)",
			in:   istioDirectBootstrap,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{{
					URI:            "dns:///istiod.istio-system.svc:15012",
					ChannelCreds:   []bootstrap.ChannelCreds{{Type: "tls", Config: json.RawMessage(`{"ca_certificate_file":"/var/run/secrets/istio/root-cert.pem"}`)}},
					CallCreds:      []bootstrap.CallCreds{{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"/var/run/secrets/tokens/istio-token"}`)}},
					ServerFeatures: []string{"xds_v3"},
				}},
				Node: bootstrap.Node{
					ID:       "sidecar~127.0.0.1~pod1.fake-namespace~fake-namespace.svc.cluster.local",
					Metadata: bootstrapStruct(t, map[string]any{"GENERATOR": "grpc", "INSTANCE_IPS": "127.0.0.1", "ISTIO_VERSION": "1.26.2", "WORKLOAD_IDENTITY_SOCKET_FILE": "socket"}),
				},
				ServerListenerResourceNameTemplate: "xds.istio.io/grpc/lds/inbound/%s",
			},
			wantChannel: []string{"tls"},
			wantCheckErr: "xds_servers[0].channel_creds[0].config.ca_certificate_file: open /var/run/secrets/istio/root-cert.pem: no such file or directory\n" +
				"xds_servers[0].call_creds[0].config.jwt_token_file: open /var/run/secrets/tokens/istio-token: no such file or directory",
		},
		{
			name: "go-control-plane example server",
			in:   goControlPlaneBootstrap,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{{URI: "localhost:18000", ChannelCreds: insecure, ServerFeatures: []string{"xds_v3"}}},
				Node:    bootstrap.Node{ID: "test-id", Cluster: "test-cluster"},
			},
			wantChannel: []string{"insecure"},
		},

		// grpc-go's bootstrap tests (internal/xds/bootstrap), the cases it
		// accepts, with the meaning it asserts.
		{
			name:        "grpc-go: empty node",
			in:          `{"xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "insecure"}]}]}`,
			want:        &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{URI: "trafficdirector.googleapis.com:443", ChannelCreds: insecure}}},
			wantChannel: []string{"insecure"},
		},
		{
			name: "grpc-go: unknown fields at top level, in node and in a server",
			in: `{` + grpcNode[:len(grpcNode)-1] + `, "unknownField": "foobar"},
				"xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "insecure"}], "unknownField": "foobar"}],
				"unknownField": "foobar"}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{{URI: "trafficdirector.googleapis.com:443", ChannelCreds: insecure}},
				Node:    grpcTestNode,
			},
			wantChannel: []string{"insecure"},
		},
		{
			name: "grpc-go: an unknown channel creds type before google_default",
			in:   `{` + grpcNode + `, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "not-google-default"}, {"type": "google_default"}], "server_features": ["xds_v3"]}]}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{{
					URI:            "trafficdirector.googleapis.com:443",
					ChannelCreds:   []bootstrap.ChannelCreds{{Type: "not-google-default"}, {Type: "google_default"}},
					ServerFeatures: []string{"xds_v3"},
				}},
				Node: grpcTestNode,
			},
			wantChannel: []string{"google_default"},
		},
		{
			name: "grpc-go: two servers (primary and fallback)",
			in: `{` + grpcNode + `, "xds_servers": [
				{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}], "server_features": ["xds_v3"]},
				{"server_uri": "backup.never.use.com:1234", "channel_creds": [{"type": "google_default"}]}]}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{tdServer("xds_v3"), {URI: "backup.never.use.com:1234", ChannelCreds: []bootstrap.ChannelCreds{{Type: "google_default"}}}},
				Node:    grpcTestNode,
			},
			wantChannel: []string{"google_default", "google_default"},
		},
		{
			name: "grpc-go: ignore_resource_deletion and trusted_xds_server features",
			in: `{` + grpcNode + `, "xds_servers": [
				{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}], "server_features": ["ignore_resource_deletion", "xds_v3"]},
				{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}], "server_features": ["trusted_xds_server", "xds_v3"]}]}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{tdServer("ignore_resource_deletion", "xds_v3"), tdServer("trusted_xds_server", "xds_v3")},
				Node:    grpcTestNode,
			},
			wantChannel: []string{"google_default", "google_default"},
		},
		{
			name: "grpc-go: federation with templates and authorities",
			in: `{` + grpcNode + `,
				"xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}]}],
				"server_listener_resource_name_template": "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/server?listening_address=%s",
				"client_default_listener_resource_name_template": "xdstp://xds.example.com/envoy.config.listener.v3.Listener/%s",
				"authorities": {
					"xds.td.com": {
						"client_listener_resource_name_template": "xdstp://xds.td.com/envoy.config.listener.v3.Listener/%s",
						"xds_servers": [{"server_uri": "td.com", "channel_creds": [{"type": "google_default"}], "server_features": ["xds_v3"]}]
					},
					"#.com": {},
					"no-servers.com": {"client_listener_resource_name_template": "xdstp://no-servers.com/envoy.config.listener.v3.Listener/%s"}
				},
				"allowed_grpc_services": {"dns:///ext-proc:443": {"channel_creds": [{"type": "insecure"}]}}}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{tdServer()},
				Node:    grpcTestNode,
				Authorities: map[string]bootstrap.Authority{
					"xds.td.com": {
						ClientListenerResourceNameTemplate: "xdstp://xds.td.com/envoy.config.listener.v3.Listener/%s",
						Servers:                            []bootstrap.ServerConfig{{URI: "td.com", ChannelCreds: []bootstrap.ChannelCreds{{Type: "google_default"}}, ServerFeatures: []string{"xds_v3"}}},
					},
					"#.com":          {},
					"no-servers.com": {ClientListenerResourceNameTemplate: "xdstp://no-servers.com/envoy.config.listener.v3.Listener/%s"},
				},
				ServerListenerResourceNameTemplate:        "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/server?listening_address=%s",
				ClientDefaultListenerResourceNameTemplate: "xdstp://xds.example.com/envoy.config.listener.v3.Listener/%s",
			},
			wantChannel: []string{"google_default"},
		},
		{
			name: "grpc-go: certificate providers of unknown plugins",
			in: `{` + grpcNode + `, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}], "server_features": ["xds_v3"]}],
				"certificate_providers": {"unknownProviderInstance1": {"plugin_name": "foo", "config": {"foo": "bar"}}, "unknownProviderInstance2": {"plugin_name": "bar", "config": {"foo": "bar"}}}}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{tdServer("xds_v3")},
				Node:    grpcTestNode,
				CertificateProviders: map[string]bootstrap.CertificateProvider{
					"unknownProviderInstance1": {PluginName: "foo", Config: json.RawMessage(`{"foo":"bar"}`)},
					"unknownProviderInstance2": {PluginName: "bar", Config: json.RawMessage(`{"foo":"bar"}`)},
				},
			},
			wantChannel: []string{"google_default"},
		},
		{
			name: "grpc-go: Istio style, TLS with an empty config and a JWT",
			in: `{"node": {"id": "sidecar~127.0.0.1~pod1.fake-namespace~fake-namespace.svc.cluster.local", "locality": {}},
				"xds_servers": [{"server_uri": "unix:///etc/istio/XDS", "channel_creds": [{"type": "tls", "config": {}}],
				"call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": "/var/run/secrets/tokens/istio-token"}}], "server_features": ["xds_v3"]}]}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{{
					URI:            "unix:///etc/istio/XDS",
					ChannelCreds:   []bootstrap.ChannelCreds{{Type: "tls", Config: json.RawMessage(`{}`)}},
					CallCreds:      []bootstrap.CallCreds{{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"/var/run/secrets/tokens/istio-token"}`)}},
					ServerFeatures: []string{"xds_v3"},
				}},
				Node: bootstrap.Node{ID: "sidecar~127.0.0.1~pod1.fake-namespace~fake-namespace.svc.cluster.local"},
			},
			wantChannel:  []string{"tls"},
			wantCheckErr: "xds_servers[0].call_creds[0].config.jwt_token_file: open /var/run/secrets/tokens/istio-token: no such file or directory",
		},
		{
			// grpc-go parses it, then cannot create the channel.
			name: "grpc-go: Istio style, insecure with a JWT",
			in: `{"xds_servers": [{"server_uri": "unix:///etc/istio/XDS", "channel_creds": [{"type": "insecure"}],
				"call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": "/var/run/secrets/tokens/istio-token"}}], "server_features": ["xds_v3"]}]}`,
			want: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{
				URI:            "unix:///etc/istio/XDS",
				ChannelCreds:   insecure,
				CallCreds:      []bootstrap.CallCreds{{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"/var/run/secrets/tokens/istio-token"}`)}},
				ServerFeatures: []string{"xds_v3"},
			}}},
			wantChannel: []string{"insecure"},
			wantCheckErr: `xds_servers[0].call_creds[0]: "jwt_token_file" call credentials need a secure channel, but channel_creds[0] is "insecure"` + "\n" +
				"xds_servers[0].call_creds[0].config.jwt_token_file: open /var/run/secrets/tokens/istio-token: no such file or directory",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bootstrap.Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseBootstrap: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("ParseBootstrap mismatch (-want +got):\n%s", diff)
			}
			var channel []string
			for _, s := range got.Servers {
				channel = append(channel, selectedChannelCreds(s))
			}
			if diff := cmp.Diff(tt.wantChannel, channel); diff != "" {
				t.Errorf("channel credentials in use mismatch (-want +got):\n%s", diff)
			}

			// Check connects nowhere; it accepts the servers unless a file
			// they name cannot be read here.
			var problems []string
			for i, s := range got.Servers {
				if err := bootstrap.DefaultCredentials().Check(s); err != nil {
					for _, line := range strings.Split(err.Error(), "\n") {
						problems = append(problems, fmt.Sprintf("xds_servers[%d].%s", i, line))
					}
				}
			}
			if got := strings.Join(problems, "\n"); got != tt.wantCheckErr {
				t.Errorf("Check:\n%s\nwant:\n%s", got, tt.wantCheckErr)
			}
		})
	}
}

// selectedChannelCreds is the channel_creds type the default transport
// uses for s: the first it supports, as gRPC chooses.
func selectedChannelCreds(s bootstrap.ServerConfig) string {
	for _, c := range s.ChannelCreds {
		if slices.Contains(bootstrap.DefaultCredentials().ChannelCredsTypes(), c.Type) {
			return c.Type
		}
	}
	return ""
}

// TestRealWorldBootstrapsRejected holds the bootstraps gRPC's own tests
// reject (grpc-go internal/xds/bootstrap), each rejected here with the
// field named.
func TestRealWorldBootstrapsRejected(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // a line of the error
	}{
		{name: "empty file", in: ``, want: "bootstrap: invalid JSON at byte offset 0"},
		{name: "bad JSON", in: `["test": 123]`, want: "bootstrap: invalid JSON at byte offset 8"},
		{name: "no servers", in: `{"node": {"id": "ENVOY_NODE_ID"}}`, want: "bootstrap: xds_servers: is required"},
		{name: "no servers, node with metadata", in: `{` + grpcNode + `}`, want: "bootstrap: xds_servers: is required"},
		{
			name: "server without channel_creds",
			in:   `{` + grpcNode + `, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443"}]}`,
			want: "bootstrap: xds_servers[0].channel_creds: is required",
		},
		{
			name: "only an unknown channel creds type",
			in:   `{` + grpcNode + `, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "not-google-default"}]}]}`,
			want: `bootstrap: xds_servers[0].channel_creds: no supported type: want one of "google_default", "insecure", "tls"; got "not-google-default"`,
		},
		{
			name: "server listener template not a string",
			in:   `{` + grpcNode + `, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}]}], "server_listener_resource_name_template": 123456789}`,
			want: "bootstrap: server_listener_resource_name_template: want string, got number",
		},
		{
			name: "client default listener template not a string",
			in:   `{"node": {"id": "ENVOY_NODE_ID"}, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}]}], "client_default_listener_resource_name_template": 123456789}`,
			want: "bootstrap: client_default_listener_resource_name_template: want string, got number",
		},
		{
			name: "authority template without its xdstp prefix",
			in: `{"node": {"id": "ENVOY_NODE_ID"}, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}]}],
				"authorities": {"xds.td.com": {"client_listener_resource_name_template": "some/template/%s",
				"xds_servers": [{"server_uri": "td.com", "channel_creds": [{"type": "google_default"}], "server_features": ["foo", "bar", "xds_v3"]}]}}}`,
			want: `bootstrap: authorities["xds.td.com"].client_listener_resource_name_template: must start with "xdstp://xds.td.com/"`,
		},
		{
			name: "certificate_providers not an object (after a trailing comma)",
			in:   `{` + grpcNode + `, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}], "server_features": ["xds_v3"],}], "certificate_providers": "bad JSON"}`,
			want: "bootstrap: invalid JSON at byte offset",
		},
		{
			name: "certificate_providers a string",
			in:   `{` + grpcNode + `, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}]}], "certificate_providers": "bad JSON"}`,
			want: "bootstrap: certificate_providers: want object, got string",
		},
		{
			// grpc-go's case uses a test-only plugin; file_watcher is the
			// plugin every gRPC knows.
			name: "a known certificate provider plugin with a bad config",
			in: `{` + grpcNode + `, "xds_servers": [{"server_uri": "trafficdirector.googleapis.com:443", "channel_creds": [{"type": "google_default"}]}],
				"certificate_providers": {"unknownProviderInstance": {"plugin_name": "foo", "config": {"foo": "bar"}}, "fileWatcherBad": {"plugin_name": "file_watcher", "config": {"configKey": 666}}}}`,
			want: `bootstrap: certificate_providers["fileWatcherBad"].config: needs certificate_file and private_key_file, or ca_certificate_file, or all three`,
		},
		{
			name: "jwt_token_file without its path",
			in:   `{"xds_servers": [{"server_uri": "xds-server:443", "channel_creds": [{"type": "tls", "config": {}}], "call_creds": [{"type": "jwt_token_file", "config": {}}]}]}`,
			want: "bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: is required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bootstrap.Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("ParseBootstrap succeeded with %+v", got)
			}
			found := false
			for _, line := range strings.Split(err.Error(), "\n") {
				found = found || strings.HasPrefix(line, tt.want)
			}
			if !found {
				t.Errorf("error = %q, want a line starting with %q", err, tt.want)
			}
		})
	}
}
