package bootstrap_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// bootstrapMinimal is the smallest valid bootstrap.
const bootstrapMinimal = `{"xds_servers": [{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "insecure"}]}]}`

func bootstrapStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseBootstrapValid(t *testing.T) {
	insecure := []bootstrap.ChannelCreds{{Type: "insecure"}}
	minimalServers := []bootstrap.ServerConfig{{URI: "xds.example.com:443", ChannelCreds: insecure}}
	tests := []struct {
		name string
		in   string
		want *bootstrap.Bootstrap
	}{
		{
			name: "minimal",
			in:   bootstrapMinimal,
			want: &bootstrap.Bootstrap{Servers: minimalServers},
		},
		{
			name: "full",
			in: `{
				"xds_servers": [
					{
						"server_uri": "primary.example.com:443",
						"channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "/ca.pem"}}],
						"server_features": ["xds_v3", "ignore_resource_deletion", "fail_on_data_errors"]
					},
					{
						"server_uri": "fallback.example.com:443",
						"channel_creds": [{"type": "insecure"}]
					}
				],
				"node": {
					"id": "node-1",
					"cluster": "cluster-1",
					"locality": {"region": "r", "zone": "z", "sub_zone": "s"},
					"metadata": {"a": "b", "n": 1.5, "t": true, "nil": null, "list": [1, "x"], "obj": {"k": "v"}}
				},
				"authorities": {
					"a.example": {
						"xds_servers": [{"server_uri": "a.example:443", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server"]}],
						"client_listener_resource_name_template": "xdstp://a.example/envoy.config.listener.v3.Listener/grpc/client/%s?project=1",
						"fallback_on_reachability_only": true
					},
					"b.example": {}
				},
				"client_default_listener_resource_name_template": "xdstp://a.example/envoy.config.listener.v3.Listener/%s",
				"server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s",
				"certificate_providers": {
					"default": {"plugin_name": "file_watcher", "config": {"certificate_file": "/cert.pem", "private_key_file": "/key.pem", "refresh_interval": "600s"}},
					"bare": {}
				}
			}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{
					{
						URI:            "primary.example.com:443",
						ChannelCreds:   []bootstrap.ChannelCreds{{Type: "tls", Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem"}`)}},
						ServerFeatures: []string{"xds_v3", "ignore_resource_deletion", "fail_on_data_errors"},
					},
					{URI: "fallback.example.com:443", ChannelCreds: insecure},
				},
				Node: bootstrap.Node{
					ID:       "node-1",
					Cluster:  "cluster-1",
					Locality: bootstrap.Locality{Region: "r", Zone: "z", SubZone: "s"},
					Metadata: bootstrapStruct(t, map[string]any{
						"a": "b", "n": 1.5, "t": true, "nil": nil,
						"list": []any{1, "x"}, "obj": map[string]any{"k": "v"},
					}),
				},
				Authorities: map[string]bootstrap.Authority{
					"a.example": {
						Servers:                            []bootstrap.ServerConfig{{URI: "a.example:443", ChannelCreds: insecure, ServerFeatures: []string{"trusted_xds_server"}}},
						ClientListenerResourceNameTemplate: "xdstp://a.example/envoy.config.listener.v3.Listener/grpc/client/%s?project=1",
						FallbackOnReachabilityOnly:         true,
					},
					"b.example": {},
				},
				ClientDefaultListenerResourceNameTemplate: "xdstp://a.example/envoy.config.listener.v3.Listener/%s",
				ServerListenerResourceNameTemplate:        "grpc/server?xds.resource.listening_address=%s",
				CertificateProviders: map[string]bootstrap.CertificateProvider{
					"default": {PluginName: "file_watcher", Config: json.RawMessage(`{"certificate_file":"/cert.pem","private_key_file":"/key.pem","refresh_interval":"600s"}`)},
					"bare":    {},
				},
			},
		},
		{
			name: "authorities with and without servers",
			in: `{
				"xds_servers": [{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "insecure"}]}],
				"authorities": {
					"with": {"xds_servers": [{"server_uri": "other:1", "channel_creds": [{"type": "insecure"}]}]},
					"empty-list": {"xds_servers": []},
					"null-list": {"xds_servers": null},
					"none": {},
					"": {"client_listener_resource_name_template": "xdstp:///envoy.config.listener.v3.Listener/%s"}
				}
			}`,
			want: &bootstrap.Bootstrap{
				Servers: minimalServers,
				Authorities: map[string]bootstrap.Authority{
					"with":       {Servers: []bootstrap.ServerConfig{{URI: "other:1", ChannelCreds: insecure}}},
					"empty-list": {},
					"null-list":  {},
					"none":       {},
					"":           {ClientListenerResourceNameTemplate: "xdstp:///envoy.config.listener.v3.Listener/%s"},
				},
			},
		},
		{
			name: "unknown fields ignored at every level",
			in: `{
				"future": {"x": [1, 2]},
				"xds_servers": [{
					"server_uri": "xds.example.com:443",
					"extra": 1,
					"call_creds": [{"type": "future_call_creds", "extra": 1, "config": {"anything": [1]}}],
					"channel_creds": [{"type": "insecure", "extra": [], "config": {"anything": {"goes": 1}}}]
				}],
				"node": {
					"id": "n", "extra": 1, "user_agent_name": 5, "client_features": "x",
					"locality": {"zone": "z", "extra": false}
				},
				"authorities": {"a": {"extra": {}, "client_listener_resource_name_template": ""}},
				"certificate_providers": {"p": {"plugin_name": "x", "extra": 1}},
				"allowed_grpc_services": {"svc": {}}
			}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{{
					URI:          "xds.example.com:443",
					ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure", Config: json.RawMessage(`{"anything":{"goes":1}}`)}},
					CallCreds:    []bootstrap.CallCreds{{Type: "future_call_creds", Config: json.RawMessage(`{"anything":[1]}`)}},
				}},
				Node:                 bootstrap.Node{ID: "n", Locality: bootstrap.Locality{Zone: "z"}},
				Authorities:          map[string]bootstrap.Authority{"a": {}},
				CertificateProviders: map[string]bootstrap.CertificateProvider{"p": {PluginName: "x"}},
			},
		},
		{
			name: "tls creds with config, whitespace removed",
			in: `{"xds_servers": [{"server_uri": "s:443", "channel_creds": [
				{"type": "tls", "config": {
					"ca_certificate_file": "/ca.pem",
					"certificate_file": "/c.pem",
					"private_key_file": "/k.pem"
				}}
			]}]}`,
			want: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{
				URI: "s:443",
				ChannelCreds: []bootstrap.ChannelCreds{{
					Type:   "tls",
					Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem","certificate_file":"/c.pem","private_key_file":"/k.pem"}`),
				}},
			}}},
		},
		{
			name: "unsupported creds before a supported one are kept",
			in: `{"xds_servers": [{"server_uri": "s:443", "channel_creds": [
				{"type": "google_default"},
				{"type": "xds", "config": {"fallback_credentials": {}}},
				{"type": "insecure"}
			]}]}`,
			want: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{
				URI: "s:443",
				ChannelCreds: []bootstrap.ChannelCreds{
					{Type: "google_default"},
					{Type: "xds", Config: json.RawMessage(`{"fallback_credentials":{}}`)},
					{Type: "insecure"},
				},
			}}},
		},
		{
			name: "null fields count as absent",
			in: `{
				"xds_servers": [{"server_uri": "s:1", "channel_creds": [{"type": "insecure", "config": null}], "server_features": null}],
				"node": {"id": null, "locality": null, "metadata": null},
				"authorities": null,
				"client_default_listener_resource_name_template": null,
				"server_listener_resource_name_template": null,
				"certificate_providers": {"p": {"plugin_name": null, "config": null}}
			}`,
			want: &bootstrap.Bootstrap{
				Servers:              []bootstrap.ServerConfig{{URI: "s:1", ChannelCreds: insecure}},
				CertificateProviders: map[string]bootstrap.CertificateProvider{"p": {}},
			},
		},
		{
			name: "empty and odd-but-valid values",
			in: `{
				"xds_servers": [{"server_uri": "s:1", "channel_creds": [{"type": "insecure", "config": {}}], "server_features": []}],
				"node": {"metadata": {}},
				"authorities": {},
				"certificate_providers": {"p": {"config": "not validated"}}
			}`,
			want: &bootstrap.Bootstrap{
				Servers:              []bootstrap.ServerConfig{{URI: "s:1", ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure", Config: json.RawMessage(`{}`)}}}},
				Node:                 bootstrap.Node{Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{}}},
				Authorities:          map[string]bootstrap.Authority{},
				CertificateProviders: map[string]bootstrap.CertificateProvider{"p": {Config: json.RawMessage(`"not validated"`)}},
			},
		},
		{
			name: "authority name needing escapes: raw and grpc-go's escaped prefix both accepted",
			in: `{
				"xds_servers": [{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}]}],
				"authorities": {
					"a b": {"client_listener_resource_name_template": "xdstp://a b/T/%s"},
					"c d": {"client_listener_resource_name_template": "xdstp://c%20d/T/%s"}
				}
			}`,
			want: &bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{{URI: "s:1", ChannelCreds: insecure}},
				Authorities: map[string]bootstrap.Authority{
					"a b": {ClientListenerResourceNameTemplate: "xdstp://a b/T/%s"},
					"c d": {ClientListenerResourceNameTemplate: "xdstp://c%20d/T/%s"},
				},
			},
		},
		{
			name: "duplicate keys keep the last value, as encoding/json does",
			in:   `{"xds_servers": [], "xds_servers": [{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}]}]}`,
			want: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{URI: "s:1", ChannelCreds: insecure}}},
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
		})
	}
}

// bootstrapWithServer puts server (a JSON object) as the only top-level
// server.
func bootstrapWithServer(server string) string {
	return `{"xds_servers": [` + server + `]}`
}

// bootstrapWith adds top-level fields to the minimal bootstrap.
func bootstrapWith(fields string) string {
	return strings.TrimSuffix(bootstrapMinimal, "}") + ", " + fields + "}"
}

func TestParseBootstrapErrors(t *testing.T) {
	const creds = `"channel_creds": [{"type": "insecure"}]`
	tests := []struct {
		name string
		in   string
		// want are lines the error must contain, each exactly.
		want []string
		// wantPrefix, when set, must start the error instead (for JSON
		// syntax errors, whose tail is encoding/json's).
		wantPrefix string
	}{
		// The document.
		{name: "root array", in: `[]`, want: []string{"bootstrap: top level: want object, got array"}},
		{name: "root string", in: `"x"`, want: []string{"bootstrap: top level: want object, got string"}},
		{name: "root null", in: `null`, want: []string{"bootstrap: top level: want object, got null"}},
		{name: "empty input", in: ``, wantPrefix: "bootstrap: invalid JSON at byte offset 0: "},
		{name: "truncated", in: `{"xds_servers": [`, wantPrefix: "bootstrap: invalid JSON at byte offset 17: "},
		{name: "bad token", in: `{"xds_servers": [}`, wantPrefix: "bootstrap: invalid JSON at byte offset 18: invalid character '}'"},
		{name: "trailing data", in: bootstrapMinimal + ` {}`, wantPrefix: "bootstrap: invalid JSON at byte offset "},

		// xds_servers.
		{name: "xds_servers missing", in: `{}`, want: []string{"bootstrap: xds_servers: is required"}},
		{name: "xds_servers null", in: `{"xds_servers": null}`, want: []string{"bootstrap: xds_servers: is required"}},
		{name: "xds_servers empty", in: `{"xds_servers": []}`, want: []string{"bootstrap: xds_servers: must not be empty"}},
		{name: "xds_servers not array", in: `{"xds_servers": {}}`, want: []string{"bootstrap: xds_servers: want array, got object"}},
		{name: "xds_servers entry not object", in: `{"xds_servers": ["xds.example.com"]}`, want: []string{"bootstrap: xds_servers[0]: want object, got string"}},
		{name: "server_uri missing", in: bootstrapWithServer(`{` + creds + `}`), want: []string{"bootstrap: xds_servers[0].server_uri: must be a non-empty string"}},
		{name: "server_uri empty", in: bootstrapWithServer(`{"server_uri": "", ` + creds + `}`), want: []string{"bootstrap: xds_servers[0].server_uri: must be a non-empty string"}},
		{name: "server_uri number", in: bootstrapWithServer(`{"server_uri": 443, ` + creds + `}`), want: []string{"bootstrap: xds_servers[0].server_uri: want string, got number"}},
		{
			name: "second server bad",
			in:   `{"xds_servers": [{"server_uri": "a", ` + creds + `}, {"server_uri": true, ` + creds + `}]}`,
			want: []string{"bootstrap: xds_servers[1].server_uri: want string, got boolean"},
		},

		// channel_creds.
		{name: "channel_creds missing", in: bootstrapWithServer(`{"server_uri": "s"}`), want: []string{"bootstrap: xds_servers[0].channel_creds: is required"}},
		{name: "channel_creds empty", in: bootstrapWithServer(`{"server_uri": "s", "channel_creds": []}`), want: []string{"bootstrap: xds_servers[0].channel_creds: must not be empty"}},
		{name: "channel_creds not array", in: bootstrapWithServer(`{"server_uri": "s", "channel_creds": {"type": "insecure"}}`), want: []string{"bootstrap: xds_servers[0].channel_creds: want array, got object"}},
		{name: "channel_creds entry not object", in: bootstrapWithServer(`{"server_uri": "s", "channel_creds": ["insecure"]}`), want: []string{"bootstrap: xds_servers[0].channel_creds[0]: want object, got string"}},
		{name: "channel_creds entry without type", in: bootstrapWithServer(`{"server_uri": "s", "channel_creds": [{"config": {}}]}`), want: []string{"bootstrap: xds_servers[0].channel_creds[0].type: is required"}},
		{name: "channel_creds type not string", in: bootstrapWithServer(`{"server_uri": "s", "channel_creds": [{"type": "insecure"}, {"type": 7}]}`), want: []string{"bootstrap: xds_servers[0].channel_creds[1].type: want string, got number"}},
		{name: "channel_creds type empty", in: bootstrapWithServer(`{"server_uri": "s", "channel_creds": [{"type": ""}]}`), want: []string{"bootstrap: xds_servers[0].channel_creds[0].type: must be a non-empty string"}},
		{
			name: "channel_creds only unsupported types",
			in:   bootstrapWithServer(`{"server_uri": "s", "channel_creds": [{"type": "xds"}, {"type": "alts"}]}`),
			want: []string{`bootstrap: xds_servers[0].channel_creds: no supported type: want one of "google_default", "insecure", "tls"; got "xds", "alts"`},
		},
		{name: "channel_creds config not object", in: bootstrapWithServer(`{"server_uri": "s", "channel_creds": [{"type": "tls", "config": ["/ca.pem"]}]}`), want: []string{"bootstrap: xds_servers[0].channel_creds[0].config: want object, got array"}},

		// server_features.
		{name: "server_features not array", in: bootstrapWithServer(`{"server_uri": "s", ` + creds + `, "server_features": "xds_v3"}`), want: []string{"bootstrap: xds_servers[0].server_features: want array, got string"}},
		{name: "server_features entry not string", in: bootstrapWithServer(`{"server_uri": "s", ` + creds + `, "server_features": ["xds_v3", {"name": "x"}]}`), want: []string{"bootstrap: xds_servers[0].server_features[1]: want string, got object"}},

		// node.
		{name: "node not object", in: bootstrapWith(`"node": "n"`), want: []string{"bootstrap: node: want object, got string"}},
		{name: "node.id number", in: bootstrapWith(`"node": {"id": 1}`), want: []string{"bootstrap: node.id: want string, got number"}},
		{name: "node.cluster boolean", in: bootstrapWith(`"node": {"cluster": false}`), want: []string{"bootstrap: node.cluster: want string, got boolean"}},
		{name: "node.metadata not object", in: bootstrapWith(`"node": {"metadata": [1]}`), want: []string{"bootstrap: node.metadata: want object, got array"}},
		{name: "node.locality not object", in: bootstrapWith(`"node": {"locality": "us-east1-b"}`), want: []string{"bootstrap: node.locality: want object, got string"}},
		{name: "node.locality.zone number", in: bootstrapWith(`"node": {"locality": {"zone": 1}}`), want: []string{"bootstrap: node.locality.zone: want string, got number"}},
		{name: "node.locality.region object", in: bootstrapWith(`"node": {"locality": {"region": {}}}`), want: []string{"bootstrap: node.locality.region: want string, got object"}},
		{name: "node.locality.sub_zone array", in: bootstrapWith(`"node": {"locality": {"sub_zone": []}}`), want: []string{"bootstrap: node.locality.sub_zone: want string, got array"}},

		// authorities.
		{name: "authorities not object", in: bootstrapWith(`"authorities": ["a"]`), want: []string{"bootstrap: authorities: want object, got array"}},
		{name: "authority entry not object", in: bootstrapWith(`"authorities": {"x": "y"}`), want: []string{`bootstrap: authorities["x"]: want object, got string`}},
		{name: "authority entry null", in: bootstrapWith(`"authorities": {"x": null}`), want: []string{`bootstrap: authorities["x"]: want object, got null`}},
		{name: "authority xds_servers not array", in: bootstrapWith(`"authorities": {"x": {"xds_servers": {}}}`), want: []string{`bootstrap: authorities["x"].xds_servers: want array, got object`}},
		{name: "authority xds_servers entry not object", in: bootstrapWith(`"authorities": {"x": {"xds_servers": [1]}}`), want: []string{`bootstrap: authorities["x"].xds_servers[0]: want object, got number`}},
		{name: "authority xds_servers bad server_uri", in: bootstrapWith(`"authorities": {"x": {"xds_servers": [{` + creds + `}]}}`), want: []string{`bootstrap: authorities["x"].xds_servers[0].server_uri: must be a non-empty string`}},
		{
			name: "authority xds_servers unsupported creds",
			in:   bootstrapWith(`"authorities": {"x": {"xds_servers": [{"server_uri": "s", "channel_creds": [{"type": "xds"}]}]}}`),
			want: []string{`bootstrap: authorities["x"].xds_servers[0].channel_creds: no supported type: want one of "google_default", "insecure", "tls"; got "xds"`},
		},
		{
			name: "authority template bad prefix",
			in:   bootstrapWith(`"authorities": {"a.example": {"client_listener_resource_name_template": "xdstp://b.example/envoy.config.listener.v3.Listener/%s"}}`),
			want: []string{`bootstrap: authorities["a.example"].client_listener_resource_name_template: must start with "xdstp://a.example/"`},
		},
		{
			name: "authority template prefix without slash",
			in:   bootstrapWith(`"authorities": {"a.example": {"client_listener_resource_name_template": "xdstp://a.example.com/T/%s"}}`),
			want: []string{`bootstrap: authorities["a.example"].client_listener_resource_name_template: must start with "xdstp://a.example/"`},
		},
		{
			name: "authority template old-style",
			in:   bootstrapWith(`"authorities": {"a": {"client_listener_resource_name_template": "%s"}}`),
			want: []string{`bootstrap: authorities["a"].client_listener_resource_name_template: must start with "xdstp://a/"`},
		},
		{
			name: "authority name quoted in path",
			in:   bootstrapWith(`"authorities": {"we\"ird": {"client_listener_resource_name_template": 1}}`),
			want: []string{`bootstrap: authorities["we\"ird"].client_listener_resource_name_template: want string, got number`},
		},
		{
			name: "fallback_on_reachability_only not bool",
			in:   bootstrapWith(`"authorities": {"a": {"fallback_on_reachability_only": "true"}}`),
			want: []string{`bootstrap: authorities["a"].fallback_on_reachability_only: want boolean, got string`},
		},

		// Templates and certificate providers.
		{
			name: "client_default_listener_resource_name_template not string",
			in:   bootstrapWith(`"client_default_listener_resource_name_template": 1`),
			want: []string{"bootstrap: client_default_listener_resource_name_template: want string, got number"},
		},
		{
			name: "server_listener_resource_name_template not string",
			in:   bootstrapWith(`"server_listener_resource_name_template": ["%s"]`),
			want: []string{"bootstrap: server_listener_resource_name_template: want string, got array"},
		},
		{name: "certificate_providers not object", in: bootstrapWith(`"certificate_providers": []`), want: []string{"bootstrap: certificate_providers: want object, got array"}},
		{name: "certificate provider not object", in: bootstrapWith(`"certificate_providers": {"p": 1}`), want: []string{`bootstrap: certificate_providers["p"]: want object, got number`}},
		{name: "certificate provider plugin_name not string", in: bootstrapWith(`"certificate_providers": {"p": {"plugin_name": 1}}`), want: []string{`bootstrap: certificate_providers["p"].plugin_name: want string, got number`}},

		// Every problem is reported, in document order.
		{
			name: "all problems collected",
			in: `{
				"xds_servers": [{"server_uri": 1, "channel_creds": []}, "x"],
				"node": {"id": 2, "locality": {"zone": 3}},
				"authorities": {"b": {"fallback_on_reachability_only": 1}, "a": 2},
				"client_default_listener_resource_name_template": false
			}`,
			want: []string{
				"bootstrap: xds_servers[0].server_uri: want string, got number",
				"bootstrap: xds_servers[0].channel_creds: must not be empty",
				"bootstrap: xds_servers[1]: want object, got string",
				"bootstrap: node.id: want string, got number",
				"bootstrap: node.locality.zone: want string, got number",
				`bootstrap: authorities["a"]: want object, got number`,
				`bootstrap: authorities["b"].fallback_on_reachability_only: want boolean, got number`,
				"bootstrap: client_default_listener_resource_name_template: want string, got boolean",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bootstrap.Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("ParseBootstrap succeeded with %+v", got)
			}
			if got != nil {
				t.Errorf("ParseBootstrap returned %+v with its error", got)
			}
			msg := err.Error()
			if tt.wantPrefix != "" {
				if !strings.HasPrefix(msg, tt.wantPrefix) || strings.Contains(msg, "\n") {
					t.Errorf("error = %q, want one line starting with %q", msg, tt.wantPrefix)
				}
				return
			}
			// Exactly the expected lines, in order: no problem is missed
			// and none is reported twice.
			if diff := cmp.Diff(tt.want, strings.Split(msg, "\n")); diff != "" {
				t.Errorf("error lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBootstrapFromEnv(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fileServer := `{"xds_servers": [{"server_uri": "from-file:443", "channel_creds": [{"type": "insecure"}]}]}`
	inlineServer := `{"xds_servers": [{"server_uri": "from-inline:443", "channel_creds": [{"type": "insecure"}]}]}`
	good := write("good.json", fileServer)
	bad := write("bad.json", `{"xds_servers": []}`)
	missing := filepath.Join(dir, "missing.json")

	tests := []struct {
		name         string
		file, inline string
		wantURI      string
		wantErr      []string // substrings
		wantIs       error
	}{
		{name: "file", file: good, wantURI: "from-file:443"},
		{name: "inline", inline: inlineServer, wantURI: "from-inline:443"},
		{name: "file takes precedence", file: good, inline: `not even JSON`, wantURI: "from-file:443"},
		{name: "empty file var means unset", file: "", inline: inlineServer, wantURI: "from-inline:443"},
		{
			name: "missing file", file: missing, inline: inlineServer,
			wantErr: []string{`bootstrap: reading file "` + missing + `" named by GRPC_XDS_BOOTSTRAP: `},
			wantIs:  fs.ErrNotExist,
		},
		{
			name: "bad file content", file: bad,
			wantErr: []string{`GRPC_XDS_BOOTSTRAP file "` + bad + `": bootstrap: xds_servers: must not be empty`},
		},
		{
			name: "bad inline content", inline: `[]`,
			wantErr: []string{"GRPC_XDS_BOOTSTRAP_CONFIG: bootstrap: top level: want object, got array"},
		},
		{
			name:    "neither set",
			wantErr: []string{bootstrap.EnvFile, bootstrap.EnvConfig},
			wantIs:  bootstrap.ErrNotSet,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(bootstrap.EnvFile, tt.file)
			t.Setenv(bootstrap.EnvConfig, tt.inline)
			b, err := bootstrap.FromEnv()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("BootstrapFromEnv: %v", err)
				}
				if got := b.Servers[0].URI; got != tt.wantURI {
					t.Errorf("server URI = %q, want %q", got, tt.wantURI)
				}
				return
			}
			if err == nil {
				t.Fatalf("BootstrapFromEnv succeeded with %+v", b)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error = %q, want it to contain %q", err, w)
				}
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
		})
	}
}

func TestBootstrapEnvNames(t *testing.T) {
	// gRPC reads these exact names; the same file must serve both.
	if bootstrap.EnvFile != "GRPC_XDS_BOOTSTRAP" || bootstrap.EnvConfig != "GRPC_XDS_BOOTSTRAP_CONFIG" {
		t.Errorf("env names = %q, %q", bootstrap.EnvFile, bootstrap.EnvConfig)
	}
}

// TestParseBootstrapCredentials covers the credential configs: what gRPC
// accepts is accepted and kept as written, what it rejects is rejected
// with the field named. Files are never opened here.
func TestParseBootstrapCredentials(t *testing.T) {
	server := func(channel, call string) string {
		s := `{"server_uri": "s:443", "channel_creds": ` + channel
		if call != "" {
			s += `, "call_creds": ` + call
		}
		return bootstrapWithServer(s + `}`)
	}
	tlsWith := func(config string) string { return `[{"type": "tls", "config": ` + config + `}]` }
	provider := func(config string) string {
		return bootstrapWith(`"certificate_providers": {"p": {"plugin_name": "file_watcher", "config": ` + config + `}}`)
	}
	insecure := `[{"type": "insecure"}]`
	tests := []struct {
		name string
		in   string
		// Exactly one of want and wantErr is set: the parsed first server
		// (or, with wantProviders, the providers), or the error lines.
		want          *bootstrap.ServerConfig
		wantProviders map[string]bootstrap.CertificateProvider
		wantErr       []string
	}{
		// Accepted.
		{
			name: "google_default alone",
			in:   server(`[{"type": "google_default"}]`, ""),
			want: &bootstrap.ServerConfig{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "google_default"}}},
		},
		{
			name: "google_default config is ignored, as gRPC does",
			in:   server(`[{"type": "google_default", "config": {"anything": 1}}]`, ""),
			want: &bootstrap.ServerConfig{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "google_default", Config: json.RawMessage(`{"anything":1}`)}}},
		},
		{
			name: "tls without config or with an empty one: system roots",
			in:   server(`[{"type": "tls"}, {"type": "tls", "config": {}}]`, ""),
			want: &bootstrap.ServerConfig{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls"}, {Type: "tls", Config: json.RawMessage(`{}`)}}},
		},
		{
			name: "tls with every field and unknown ones",
			in: server(tlsWith(`{"ca_certificate_file": "/ca.pem", "certificate_file": "/d/c.pem", "private_key_file": "/d/k.pem",
				"refresh_interval": "0.100s", "spiffe_trust_bundle_map_file": "/m.json", "future": [1]}`), ""),
			want: &bootstrap.ServerConfig{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls", Config: json.RawMessage(
				`{"ca_certificate_file":"/ca.pem","certificate_file":"/d/c.pem","private_key_file":"/d/k.pem","refresh_interval":"0.100s","spiffe_trust_bundle_map_file":"/m.json","future":[1]}`)}}},
		},
		{
			name: "tls refresh_interval of zero and of whole seconds",
			in:   server(`[{"type": "tls", "config": {"ca_certificate_file": "/ca.pem", "refresh_interval": "0s"}}, {"type": "tls", "config": {"refresh_interval": "900s"}}]`, ""),
			want: &bootstrap.ServerConfig{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{
				{Type: "tls", Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem","refresh_interval":"0s"}`)},
				{Type: "tls", Config: json.RawMessage(`{"refresh_interval":"900s"}`)},
			}},
		},
		{
			name: "only the channel creds gRPC uses are validated",
			in:   server(`[{"type": "xds"}, {"type": "insecure"}, {"type": "tls", "config": {"ca_certificate_file": 5}}]`, ""),
			want: &bootstrap.ServerConfig{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{
				{Type: "xds"}, {Type: "insecure"}, {Type: "tls", Config: json.RawMessage(`{"ca_certificate_file":5}`)},
			}},
		},
		{
			name: "call_creds jwt_token_file over tls",
			in:   server(tlsWith(`{}`), `[{"type": "jwt_token_file", "config": {"jwt_token_file": "/var/run/secrets/tokens/istio-token"}}]`),
			want: &bootstrap.ServerConfig{
				URI:          "s:443",
				ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls", Config: json.RawMessage(`{}`)}},
				CallCreds:    []bootstrap.CallCreds{{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"/var/run/secrets/tokens/istio-token"}`)}},
			},
		},
		{
			// grpc-go parses this; the channel then cannot be created, which
			// engine.New reports (TestNewRejectsCallCredsOnInsecure).
			name: "call_creds over insecure parses",
			in:   server(insecure, `[{"type": "jwt_token_file", "config": {"jwt_token_file": "/t"}}]`),
			want: &bootstrap.ServerConfig{
				URI:          "s:443",
				ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure"}},
				CallCreds:    []bootstrap.CallCreds{{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"/t"}`)}},
			},
		},
		{
			name: "unknown call_creds types kept, unvalidated, beside known ones",
			in:   server(insecure, `[{"type": "sts"}, {"type": "jwt_token_file", "config": {"jwt_token_file": "/t1"}}, {"type": "x", "config": {"k": 1}}, {"type": "jwt_token_file", "config": {"jwt_token_file": "/t2"}}]`),
			want: &bootstrap.ServerConfig{
				URI:          "s:443",
				ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure"}},
				CallCreds: []bootstrap.CallCreds{
					{Type: "sts"},
					{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"/t1"}`)},
					{Type: "x", Config: json.RawMessage(`{"k":1}`)},
					{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"/t2"}`)},
				},
			},
		},
		{
			name: "empty and null call_creds",
			in:   `{"xds_servers": [{"server_uri": "s:443", "channel_creds": [{"type": "insecure"}], "call_creds": []}, {"server_uri": "t:443", "channel_creds": [{"type": "insecure"}], "call_creds": null}]}`,
			want: &bootstrap.ServerConfig{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure"}}},
		},
		{
			name:          "file_watcher provider with only roots",
			in:            provider(`{"ca_certificate_file": "/ca.pem"}`),
			wantProviders: map[string]bootstrap.CertificateProvider{"p": {PluginName: "file_watcher", Config: json.RawMessage(`{"ca_certificate_file":"/ca.pem"}`)}},
		},
		{
			name: "other plugins' configs are not validated",
			in:   bootstrapWith(`"certificate_providers": {"a": {"plugin_name": "meshca", "config": {"x": 1}}, "b": {"plugin_name": "FILE_WATCHER"}}`),
			wantProviders: map[string]bootstrap.CertificateProvider{
				"a": {PluginName: "meshca", Config: json.RawMessage(`{"x":1}`)},
				"b": {PluginName: "FILE_WATCHER"},
			},
		},

		// Rejected: tls.
		{name: "tls ca_certificate_file number", in: server(tlsWith(`{"ca_certificate_file": 5}`), ""), wantErr: []string{
			"bootstrap: xds_servers[0].channel_creds[0].config.ca_certificate_file: want string, got number"}},
		{name: "tls certificate_file array", in: server(tlsWith(`{"certificate_file": ["/c.pem"], "private_key_file": "/k.pem"}`), ""), wantErr: []string{
			"bootstrap: xds_servers[0].channel_creds[0].config.certificate_file: want string, got array"}},
		{name: "tls private_key_file object", in: server(tlsWith(`{"certificate_file": "/c.pem", "private_key_file": {}}`), ""), wantErr: []string{
			"bootstrap: xds_servers[0].channel_creds[0].config.private_key_file: want string, got object"}},
		{name: "tls refresh_interval number", in: server(tlsWith(`{"refresh_interval": 600}`), ""), wantErr: []string{
			`bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: want a protobuf JSON Duration string such as "600s", got 600`}},
		{name: "tls refresh_interval Go syntax", in: server(tlsWith(`{"refresh_interval": "10m"}`), ""), wantErr: []string{
			`bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: want a protobuf JSON Duration string such as "600s", got "10m"`}},
		{name: "tls refresh_interval negative", in: server(tlsWith(`{"refresh_interval": "-5s"}`), ""), wantErr: []string{
			`bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: must not be negative, got "-5s"`}},
		{name: "tls certificate without key", in: server(tlsWith(`{"certificate_file": "/d/c.pem"}`), ""), wantErr: []string{
			"bootstrap: xds_servers[0].channel_creds[0].config.private_key_file: is required with certificate_file"}},
		{name: "tls key without certificate", in: server(tlsWith(`{"private_key_file": "/d/k.pem", "ca_certificate_file": "/ca.pem"}`), ""), wantErr: []string{
			"bootstrap: xds_servers[0].channel_creds[0].config.certificate_file: is required with private_key_file"}},
		{name: "tls key and certificate in two directories", in: server(tlsWith(`{"certificate_file": "/a/c.pem", "private_key_file": "/b/k.pem"}`), ""), wantErr: []string{
			"bootstrap: xds_servers[0].channel_creds[0].config.private_key_file: must be in the directory of certificate_file (/a), got /b/k.pem"}},
		{name: "tls selected after an unsupported type", in: server(`[{"type": "xds"}, {"type": "tls", "config": {"ca_certificate_file": true}}]`, ""), wantErr: []string{
			"bootstrap: xds_servers[0].channel_creds[1].config.ca_certificate_file: want string, got boolean"}},
		{
			name: "tls: every problem at once",
			in:   server(tlsWith(`{"ca_certificate_file": 1, "certificate_file": 2, "refresh_interval": "x"}`), ""),
			wantErr: []string{
				"bootstrap: xds_servers[0].channel_creds[0].config.certificate_file: want string, got number",
				"bootstrap: xds_servers[0].channel_creds[0].config.ca_certificate_file: want string, got number",
				`bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: want a protobuf JSON Duration string such as "600s", got "x"`,
			},
		},
		{
			name:    "tls in an authority",
			in:      bootstrapWith(`"authorities": {"a": {"xds_servers": [{"server_uri": "s", "channel_creds": [{"type": "tls", "config": {"certificate_file": "/c.pem"}}]}]}}`),
			wantErr: []string{`bootstrap: authorities["a"].xds_servers[0].channel_creds[0].config.private_key_file: is required with certificate_file`},
		},

		// Rejected: call_creds.
		{name: "call_creds not array", in: server(insecure, `{"type": "jwt_token_file"}`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds: want array, got object"}},
		{name: "call_creds entry not object", in: server(insecure, `["jwt_token_file"]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[0]: want object, got string"}},
		{name: "call_creds type missing", in: server(insecure, `[{"config": {}}]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[0].type: is required"}},
		{name: "call_creds type number", in: server(insecure, `[{"type": 1}]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[0].type: want string, got number"}},
		{name: "call_creds type empty", in: server(insecure, `[{"type": ""}]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[0].type: must be a non-empty string"}},
		{name: "call_creds config not object", in: server(insecure, `[{"type": "x", "config": "/t"}]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[0].config: want object, got string"}},
		{name: "jwt_token_file without config", in: server(insecure, `[{"type": "jwt_token_file"}]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: is required"}},
		{name: "jwt_token_file empty config", in: server(insecure, `[{"type": "x"}, {"type": "jwt_token_file", "config": {}}]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[1].config.jwt_token_file: is required"}},
		{name: "jwt_token_file empty path", in: server(insecure, `[{"type": "jwt_token_file", "config": {"jwt_token_file": ""}}]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: is required"}},
		{name: "jwt_token_file path number", in: server(insecure, `[{"type": "jwt_token_file", "config": {"jwt_token_file": 1}}]`), wantErr: []string{
			"bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: want string, got number"}},

		// Rejected: file_watcher certificate providers.
		{name: "file_watcher without config", in: bootstrapWith(`"certificate_providers": {"p": {"plugin_name": "file_watcher"}}`), wantErr: []string{
			`bootstrap: certificate_providers["p"].config: needs certificate_file and private_key_file, or ca_certificate_file, or all three`}},
		{name: "file_watcher without files", in: provider(`{"refresh_interval": "600s"}`), wantErr: []string{
			`bootstrap: certificate_providers["p"].config: needs certificate_file and private_key_file, or ca_certificate_file, or all three`}},
		{name: "file_watcher config not object", in: provider(`"not validated"`), wantErr: []string{
			`bootstrap: certificate_providers["p"].config: want object, got string`}},
		{name: "file_watcher certificate without key", in: provider(`{"certificate_file": "/c.pem", "ca_certificate_file": "/ca.pem"}`), wantErr: []string{
			`bootstrap: certificate_providers["p"].config.private_key_file: is required with certificate_file`}},
		{name: "file_watcher bad refresh_interval", in: provider(`{"ca_certificate_file": "/ca.pem", "refresh_interval": {"seconds": 1}}`), wantErr: []string{
			`bootstrap: certificate_providers["p"].config.refresh_interval: want a protobuf JSON Duration string such as "600s", got {"seconds":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bootstrap.Parse([]byte(tt.in))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("ParseBootstrap succeeded with %+v", got)
				}
				if diff := cmp.Diff(tt.wantErr, strings.Split(err.Error(), "\n")); diff != "" {
					t.Errorf("error lines mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseBootstrap: %v", err)
			}
			if tt.wantProviders != nil {
				if diff := cmp.Diff(tt.wantProviders, got.CertificateProviders); diff != "" {
					t.Errorf("certificate providers mismatch (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(*tt.want, got.Servers[0]); diff != "" {
				t.Errorf("server mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
