package bootstrap_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/registry"
)

// TestCredentialProblemsAreFieldErrors: a credentials config's problem is
// a *registry.FieldError, the module's one field error, naming its whole
// JSON path, and keeps the error behind it.
func TestCredentialProblemsAreFieldErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "ca.pem")
	tests := []struct {
		name      string
		bootstrap string
		check     bool // Credentials.Check (opens files), not only Parse
		field     string
		rule      string
		is        error
	}{
		{
			name:      "a rule broken at parse time",
			bootstrap: `{"xds_servers": [{"server_uri": "s:443", "channel_creds": [{"type": "tls", "config": {"refresh_interval": 5}}]}]}`,
			field:     "xds_servers[0].channel_creds[0].config.refresh_interval",
			rule:      `want a protobuf JSON Duration string such as "600s", got 5`,
		},
		{
			name:      "a file that cannot be read",
			bootstrap: `{"xds_servers": [{"server_uri": "s:443", "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "` + missing + `"}}]}]}`,
			check:     true,
			field:     "channel_creds[0].config.ca_certificate_file",
			rule:      "open " + missing + ": no such file or directory",
			is:        fs.ErrNotExist,
		},
		{
			name:      "a call credentials config",
			bootstrap: `{"xds_servers": [{"server_uri": "s:443", "channel_creds": [{"type": "tls"}], "call_creds": [{"type": "jwt_token_file", "config": {}}]}]}`,
			field:     "xds_servers[0].call_creds[0].config.jwt_token_file",
			rule:      "is required",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs, err := bootstrap.Parse([]byte(tt.bootstrap))
			if tt.check {
				if err != nil {
					t.Fatal(err)
				}
				err = bootstrap.DefaultCredentials().Check(bs.Servers[0])
			}
			var fe *registry.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) holds no *registry.FieldError", err, err)
			}
			if fe.Field != tt.field || fe.Error() != tt.field+": "+tt.rule {
				t.Errorf("field error %q (field %q), want field %q, rule %q", fe, fe.Field, tt.field, tt.rule)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
		})
	}
}

// headerCreds sends one header with every call.
type headerCreds struct{ k, v string }

func (h headerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{h.k: h.v}, nil
}

func (headerCreds) RequireTransportSecurity() bool { return false }

// TestBuiltCredsOrder: what Credentials.Build returns holds the channel
// type's own per-call credentials first, then each call_creds entry's,
// and leaves what the type built unchanged.
func TestBuiltCredsOrder(t *testing.T) {
	var typeBuilt []credentials.PerRPCCredentials
	creds := bootstrap.DefaultCredentials().
		WithChannelCreds(bootstrap.ChannelCredsType{
			Name:     "insecure_with_header",
			Insecure: true,
			Build: func(json.RawMessage) (bootstrap.BuiltCreds, error) {
				// Room to spare: an append by Build must not write into it.
				typeBuilt = make([]credentials.PerRPCCredentials, 1, 4)
				typeBuilt[0] = headerCreds{"x-own", "1"}
				return bootstrap.BuiltCreds{Transport: insecure.NewCredentials(), PerRPC: typeBuilt}, nil
			},
		}).
		WithCallCreds(bootstrap.CallCredsType{
			Name:  "header",
			Build: func(json.RawMessage) (credentials.PerRPCCredentials, error) { return headerCreds{"x-call", "2"}, nil },
		})
	built, err := creds.Build(bootstrap.ServerConfig{URI: "s:443",
		ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure_with_header"}},
		CallCreds:    []bootstrap.CallCreds{{Type: "header"}, {Type: "header"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer built.Close()
	var headers []string
	for _, pc := range built.PerRPC {
		md, err := pc.GetRequestMetadata(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for k := range md {
			headers = append(headers, k)
		}
	}
	if want := []string{"x-own", "x-call", "x-call"}; !slices.Equal(headers, want) {
		t.Errorf("per-call credentials send %v, want %v", headers, want)
	}
	if spare := typeBuilt[1:2]; spare[0] != nil {
		t.Errorf("Build appended into the channel type's slice: %v", spare)
	}
}
