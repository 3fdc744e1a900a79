package engine_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/internal/testutil/testpki"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// tlsConfigJSON is a "tls" channel_creds config naming files.
func tlsConfigJSON(ca, cert, key, refresh string) json.RawMessage {
	m := map[string]string{}
	for k, v := range map[string]string{"ca_certificate_file": ca, "certificate_file": cert, "private_key_file": key, "refresh_interval": refresh} {
		if v != "" {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// credsEngineConfig is an engine configuration for credential tests: real
// clock, quick reconnection, switches pinned.
func credsEngineConfig(servers ...bootstrap.ServerConfig) engine.Config {
	return engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: servers, Node: bootstrap.Node{ID: nodeID}},
		Registry:  testtype.Registry(),
		Switches:  &features.Switches{},
		Backoff:   func(int) time.Duration { return 20 * time.Millisecond },
		Transport: transport.GRPC(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
			MinConnectTimeout: time.Second,
		})),
	}
}

// TestNewReportsCredentialFileProblems is the regression test for credential
// files that cannot be used: engine.New used to accept them, and every
// connection then failed with UNAVAILABLE.
func TestNewReportsCredentialFileProblems(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	leaf := ca.Client(t, "client")
	other := ca.Client(t, "other")
	caFile := testpki.WriteFile(t, dir, "ca.pem", ca.CertPEM)
	certFile := testpki.WriteFile(t, dir, "cert.pem", leaf.CertPEM)
	keyFile := testpki.WriteFile(t, dir, "key.pem", leaf.KeyPEM)
	otherKey := testpki.WriteFile(t, dir, "other-key.pem", other.KeyPEM)
	notPEM := testpki.WriteFile(t, dir, "not.pem", []byte("not PEM at all\n"))
	tokenFile := testpki.WriteFile(t, dir, "token", []byte("a.b.c"))
	missing := filepath.Join(dir, "missing.pem")
	tlsServer := func(uri string, config json.RawMessage) bootstrap.ServerConfig {
		return bootstrap.ServerConfig{URI: uri, ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls", Config: config}}}
	}
	good := tlsServer("good:443", tlsConfigJSON(caFile, certFile, keyFile, ""))
	const prefix = "engine: bootstrap xds_servers[0].channel_creds[0].config."

	tests := []struct {
		name      string
		bootstrap bootstrap.Bootstrap
		want      []string // the error's lines; none: New succeeds
		wantIs    error
	}{
		{name: "all files good", bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{good}}},
		{
			name:      "missing ca_certificate_file",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{tlsServer("s:443", tlsConfigJSON(missing, "", "", ""))}},
			want:      []string{prefix + "ca_certificate_file: open " + missing + ": no such file or directory"},
			wantIs:    fs.ErrNotExist,
		},
		{
			name:      "ca_certificate_file is a directory",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{tlsServer("s:443", tlsConfigJSON(dir, "", "", ""))}},
			want:      []string{prefix + "ca_certificate_file: read " + dir + ": is a directory"},
		},
		{
			name:      "ca_certificate_file not PEM",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{tlsServer("s:443", tlsConfigJSON(notPEM, "", "", ""))}},
			want:      []string{prefix + "ca_certificate_file: " + notPEM + ": no PEM certificate"},
		},
		{
			name:      "ca_certificate_file holds a key",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{tlsServer("s:443", tlsConfigJSON(keyFile, "", "", ""))}},
			want:      []string{prefix + "ca_certificate_file: " + keyFile + ": no PEM certificate"},
		},
		{
			name:      "missing certificate_file and private_key_file",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{tlsServer("s:443", tlsConfigJSON(caFile, missing, filepath.Join(dir, "missing-key.pem"), ""))}},
			want: []string{
				prefix + "certificate_file: open " + missing + ": no such file or directory",
				prefix + "private_key_file: open " + filepath.Join(dir, "missing-key.pem") + ": no such file or directory",
			},
			wantIs: fs.ErrNotExist,
		},
		{
			name:      "certificate_file not PEM",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{tlsServer("s:443", tlsConfigJSON("", notPEM, keyFile, ""))}},
			want:      []string{prefix + "certificate_file: " + notPEM + ": no PEM certificate"},
		},
		{
			name:      "private_key_file holds a certificate",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{tlsServer("s:443", tlsConfigJSON("", certFile, certFile, ""))}},
			want:      []string{prefix + "private_key_file: " + certFile + ": no PEM private key"},
		},
		{
			name:      "certificate and key do not match",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{tlsServer("s:443", tlsConfigJSON(caFile, certFile, otherKey, ""))}},
			want:      []string{prefix + "private_key_file: " + otherKey + " with certificate_file " + certFile + ": tls: private key does not match public key"},
		},
		{
			name: "config built in code, not parsed: wrong field type",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{
				tlsServer("s:443", json.RawMessage(`{"ca_certificate_file": 5, "refresh_interval": "10m"}`)),
			}},
			want: []string{
				prefix + "ca_certificate_file: want string, got number",
				prefix + `refresh_interval: want a protobuf JSON Duration string such as "600s", got "10m"`,
			},
		},
		{
			name:      "config built in code: no supported channel creds",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "xds"}}}}},
			want:      []string{`engine: bootstrap xds_servers[0].channel_creds: no supported type: want one of "google_default", "insecure", "tls"; got "xds"`},
		},
		{
			name: "fallback server and authority servers",
			bootstrap: bootstrap.Bootstrap{
				Servers: []bootstrap.ServerConfig{good, tlsServer("fallback:443", tlsConfigJSON(missing, "", "", ""))},
				Authorities: map[string]bootstrap.Authority{
					"b.example": {Servers: []bootstrap.ServerConfig{good, tlsServer("b:443", tlsConfigJSON(notPEM, "", "", ""))}},
					"a.example": {Servers: []bootstrap.ServerConfig{tlsServer("a:443", tlsConfigJSON(caFile, certFile, otherKey, ""))}},
					"c.example": {}, // the top-level servers, checked once
				},
			},
			want: []string{
				"engine: bootstrap xds_servers[1].channel_creds[0].config.ca_certificate_file: open " + missing + ": no such file or directory",
				`engine: bootstrap authorities["a.example"].xds_servers[0].channel_creds[0].config.private_key_file: ` + otherKey + " with certificate_file " + certFile + ": tls: private key does not match public key",
				`engine: bootstrap authorities["b.example"].xds_servers[1].channel_creds[0].config.ca_certificate_file: ` + notPEM + ": no PEM certificate",
			},
			wantIs: fs.ErrNotExist,
		},
		{
			name: "only the channel creds in use are checked",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{
				{Type: "insecure"}, {Type: "tls", Config: tlsConfigJSON(missing, "", "", "")},
			}}}},
		},
		{
			name: "missing jwt_token_file",
			bootstrap: bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{{
				URI:          "s:443",
				ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls", Config: tlsConfigJSON(caFile, "", "", "")}},
				CallCreds: []bootstrap.CallCreds{
					{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file": "` + tokenFile + `"}`)},
					{Type: "unknown", Config: json.RawMessage(`{"jwt_token_file": "` + missing + `"}`)},
					{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file": "` + missing + `"}`)},
				},
			}}},
			want:   []string{"engine: bootstrap xds_servers[0].call_creds[2].config.jwt_token_file: open " + missing + ": no such file or directory"},
			wantIs: fs.ErrNotExist,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := credsEngineConfig()
			cfg.Bootstrap = &tt.bootstrap
			eng, err := engine.New(cfg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("engine.New: %v", err)
				}
				eng.Close()
				return
			}
			if err == nil {
				eng.Close()
				t.Fatalf("engine.New succeeded, want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines mismatch (-want +got):\n%s", diff)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
		})
	}
}

// TestNewReportsUnreadableFile needs a file the test cannot read, which
// root can.
func TestNewReportsUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	caFile := testpki.WriteFile(t, dir, "ca.pem", ca.CertPEM)
	if err := os.Chmod(caFile, 0); err != nil {
		t.Fatal(err)
	}
	cfg := credsEngineConfig(bootstrap.ServerConfig{URI: "s:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls", Config: tlsConfigJSON(caFile, "", "", "")}}})
	_, err := engine.New(cfg)
	want := "engine: bootstrap xds_servers[0].channel_creds[0].config.ca_certificate_file: open " + caFile + ": permission denied"
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("engine.New error = %v, want %q", err, want)
	}
}

// plainBuilder is a transport.Builder without a CheckServer method.
type plainBuilder struct{ transport.Builder }

// checkingBuilder adds a CheckServer that reports two problems.
type checkingBuilder struct{ transport.Builder }

func (checkingBuilder) CheckServer(s bootstrap.ServerConfig) error {
	if s.URI != "bad:443" {
		return nil
	}
	return errors.Join(errors.New("server_uri: not this one"), errors.New("channel_creds[0]: nor these"))
}

func TestNewServerCheckerIsOptional(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	bad := bootstrap.ServerConfig{URI: "bad:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls", Config: tlsConfigJSON(missing, "", "", "")}}}
	tests := []struct {
		name      string
		transport transport.Builder
		want      []string
	}{
		{name: "without CheckServer nothing is checked", transport: plainBuilder{transport.GRPC()}},
		{
			name:      "a checker's joined errors, one line each",
			transport: checkingBuilder{transport.GRPC()},
			want: []string{
				"engine: bootstrap xds_servers[1].server_uri: not this one",
				"engine: bootstrap xds_servers[1].channel_creds[0]: nor these",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := credsEngineConfig(bootstrap.InsecureServer("good:443"), bad)
			cfg.Transport = tt.transport
			eng, err := engine.New(cfg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("engine.New: %v", err)
				}
				eng.Close()
				return
			}
			if err == nil {
				eng.Close()
				t.Fatal("engine.New succeeded")
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// jwtToken makes an unsigned JWT that expires at exp: gRPC reads only the
// "exp" claim; the server is the one to verify.
func jwtToken(exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." +
		enc(fmt.Appendf(nil, `{"sub":"workload","exp":%d}`, exp.Unix())) + "." + enc([]byte("signature"))
}

// startTLSADS starts a scripted ADS server that speaks TLS with the
// config current returns at each handshake.
func startTLSADS(t *testing.T, current func(*tls.ClientHelloInfo) *tls.Config) *scriptedads.Server {
	t.Helper()
	creds := credentials.NewTLS(&tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) { return current(h), nil },
	})
	return scriptedads.Start(t, scriptedads.WithServerOptions(grpc.Creds(creds)))
}

// serverTLS is a server config: cert, and client certificates from
// clientCA required when clientCA is set.
func serverTLS(cert tls.Certificate, clientCA *testpki.CA, seen func(cn string)) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
	if clientCA != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = clientCA.Pool
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			seen(cs.PeerCertificates[0].Subject.CommonName)
			return nil
		}
	}
	return cfg
}

// TestJWTCallCreds: over TLS, the token read from the file reaches the
// server as "authorization: Bearer <token>" on the ADS stream.
func TestJWTCallCreds(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	srvTLS := serverTLS(ca.Server(t, "127.0.0.1").TLS, nil, nil)
	srv := startTLSADS(t, func(*tls.ClientHelloInfo) *tls.Config { return srvTLS })
	token := jwtToken(time.Now().Add(time.Hour))
	tokenFile := testpki.WriteFile(t, dir, "token", []byte(token+"\n"))
	caFile := testpki.WriteFile(t, dir, "ca.pem", ca.CertPEM)

	b, err := bootstrap.Parse(fmt.Appendf(nil, `{"xds_servers": [{
		"server_uri": %q,
		"channel_creds": [{"type": "tls", "config": {"ca_certificate_file": %q}}],
		"call_creds": [{"type": "unknown_call_creds"}, {"type": "jwt_token_file", "config": {"jwt_token_file": %q}}]
	}], "node": {"id": %q}}`, srv.Addr(), caFile, tokenFile, nodeID))
	if err != nil {
		t.Fatal(err)
	}
	cfg := credsEngineConfig()
	cfg.Bootstrap = b
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	defer eng.Close()
	w := watchrec.New()
	defer eng.Watch(thing, "r1", w)()

	st := srv.WaitStream(t)
	if got, want := st.Metadata().Get("authorization"), []string{"Bearer " + token}; !cmp.Equal(got, want) {
		t.Errorf("authorization = %q, want %q", got, want)
	}
	wantRequest(t, st.RecvT(t), thing, "", "", "r1")
	st.SendT(t, resp(thing, "1", res(thing, "r1", "v", "1")))
	if ev := w.NextChanged(t); ev.Err != nil || resourceName(t, ev.Resource) != "r1" {
		t.Fatalf("watcher got %v, want r1", ev)
	}
}

// TestCallCredsOverInsecure: gRPC will not send a token in the clear. grpc-go
// accepts such a bootstrap but cannot then create the channel; New says so
// at once, naming the entry, and the transport refuses to build.
func TestCallCredsOverInsecure(t *testing.T) {
	tokenFile := testpki.WriteFile(t, t.TempDir(), "token", []byte(jwtToken(time.Now().Add(time.Hour))))
	s := bootstrap.ServerConfig{
		URI:          "127.0.0.1:1",
		ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure"}},
		CallCreds:    []bootstrap.CallCreds{{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"` + tokenFile + `"}`)}},
	}
	const want = `call_creds[0]: "jwt_token_file" call credentials need a secure channel, but channel_creds[0] is "insecure"`

	_, err := engine.New(credsEngineConfig(s))
	if err == nil || err.Error() != "engine: bootstrap xds_servers[0]."+want {
		t.Errorf("engine.New error = %v, want %q", err, "engine: bootstrap xds_servers[0]."+want)
	}
	tr, err := transport.GRPC().Build(s, transport.Options{})
	if err == nil {
		tr.Close()
		t.Fatal("Build succeeded")
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Build error = %v, want it to contain %q", err, want)
	}
	// An unknown call creds type is ignored, as gRPC does, so insecure is
	// fine with it.
	s.CallCreds = []bootstrap.CallCreds{{Type: "unknown_call_creds"}}
	eng, err := engine.New(credsEngineConfig(s))
	if err != nil {
		t.Fatalf("engine.New with an unknown call creds type: %v", err)
	}
	eng.Close()
}

// TestTLSCertificateRotation is the regression test for rotated mesh
// certificates (gRFC A65): the engine must pick up new files on its next
// connection without a restart. The server first accepts only clients of
// the first CA, then only of the second; the client's files are replaced
// in between.
func TestTLSCertificateRotation(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	dir := t.TempDir()
	var seen sync.Map // client certificate CN -> true, as the server verified it
	record := func(cn string) { seen.Store(cn, true) }
	ca1, ca2 := testpki.NewCA(t, "ca-1"), testpki.NewCA(t, "ca-2")
	var current atomic.Pointer[tls.Config]
	current.Store(serverTLS(ca1.Server(t, "127.0.0.1").TLS, ca1, record))
	srv := startTLSADS(t, func(*tls.ClientHelloInfo) *tls.Config { return current.Load() })

	writeClientFiles := func(ca *testpki.CA, cn string) (caFile, certFile, keyFile string) {
		leaf := ca.Client(t, cn)
		// Key before certificate: a watcher reading in between sees a
		// pair that does not match, skips it and reads again later.
		keyFile = testpki.WriteFile(t, dir, "key.pem", leaf.KeyPEM)
		certFile = testpki.WriteFile(t, dir, "cert-chain.pem", leaf.CertPEM)
		caFile = testpki.WriteFile(t, dir, "root-cert.pem", ca.CertPEM)
		return caFile, certFile, keyFile
	}
	caFile, certFile, keyFile := writeClientFiles(ca1, "client-1")
	cfg := credsEngineConfig(bootstrap.ServerConfig{
		URI:          srv.Addr(),
		ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls", Config: tlsConfigJSON(caFile, certFile, keyFile, "0.1s")}},
	})
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	w := watchrec.New()
	cancel := eng.Watch(thing, "r1", w)

	st := srv.WaitStream(t)
	wantRequest(t, st.RecvT(t), thing, "", "", "r1")
	st.SendT(t, resp(thing, "1", res(thing, "r1", "v", "1")))
	if ev := w.NextChanged(t); ev.Err != nil {
		t.Fatalf("watcher got %v, want r1", ev)
	}
	if _, ok := seen.Load("client-1"); !ok {
		t.Fatal("the server did not see client-1's certificate")
	}

	// Rotate: new CA for both sides. The server restarts accepting only
	// the new one; the client's files change under the running engine.
	writeClientFiles(ca2, "client-2")
	current.Store(serverTLS(ca2.Server(t, "127.0.0.1").TLS, ca2, record))
	srv.Stop()
	srv.Restart()

	st = srv.WaitStream(t)
	req := recvNames(t, st, thing, "r1")
	if req.GetVersionInfo() != "1" {
		t.Errorf("resubscription version = %q, want %q", req.GetVersionInfo(), "1")
	}
	if _, ok := seen.Load("client-2"); !ok {
		t.Fatal("the stream after rotation did not come with client-2's certificate")
	}
	st.SendT(t, resp(thing, "2", res(thing, "r1", "v", "2")))
	for {
		ev := w.Next(t)
		if !ev.Ambient && ev.Err == nil {
			break // r1 version 2, over the rotated credentials
		}
		if ev.Err != nil && status.Code(ev.Err) != codes.Unavailable {
			t.Fatalf("watcher got %v", ev)
		}
	}

	// Closing the engine stops the file watcher with the transport.
	cancel()
	eng.Close()
	srv.Close()
	goleak.VerifyNone(t, ignore)
}

// fakeTokenEndpoint is Google's OAuth token endpoint as a service account
// key file's token_uri reaches it: it grants accessToken for a signed JWT.
func fakeTokenEndpoint(t *testing.T, accessToken string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.Form.Get("assertion") == "" {
			http.Error(w, "want a JWT bearer grant", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token": %q, "token_type": "Bearer", "expires_in": 3600}`, accessToken)
	}))
	t.Cleanup(func() {
		srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	return srv
}

// TestGoogleDefault checks google_default without Google: Application
// Default Credentials come from a service account file made here (so that
// nothing probes for a metadata server), and the servers are on loopback.
func TestGoogleDefault(t *testing.T) {
	dir := t.TempDir()
	tokenSrv := fakeTokenEndpoint(t, "ya29.test-access-token")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", testpki.WriteFile(t, dir, "sa.json", testpki.ServiceAccountJSON(t, tokenSrv.URL+"/token")))
	ca := testpki.NewCA(t, "private ca")
	srvTLS := serverTLS(ca.Server(t, "localhost").TLS, nil, nil)
	hellos := make(chan *tls.ClientHelloInfo, 100)
	srv := startTLSADS(t, func(h *tls.ClientHelloInfo) *tls.Config {
		select {
		case hellos <- h:
		default: // a retrying client; the first hellos tell enough
		}
		return srvTLS
	})
	_, port, _ := strings.Cut(srv.Addr(), ":")
	server := bootstrap.ServerConfig{URI: "localhost:" + port, ChannelCreds: []bootstrap.ChannelCreds{{Type: "not-known"}, {Type: "google_default"}}}

	t.Run("TLS with the system's roots, named after server_uri", func(t *testing.T) {
		eng, err := engine.New(credsEngineConfig(server))
		if err != nil {
			t.Fatalf("engine.New: %v", err)
		}
		defer eng.Close()
		w := watchrec.New()
		defer eng.Watch(thing, "r1", w)()

		select {
		case h := <-hellos:
			if h.ServerName != "localhost" || !slices.Contains(h.SupportedProtos, "h2") {
				t.Errorf("client hello: server name %q, ALPN %q; want \"localhost\" and h2", h.ServerName, h.SupportedProtos)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no TLS client hello reached the server")
		}
		// The private CA is not among the system's roots.
		ev := w.NextChanged(t)
		if status.Code(ev.Err) != codes.Unavailable || !strings.Contains(ev.Err.Error(), "certificate signed by unknown authority") {
			t.Errorf("watcher got %v, want UNAVAILABLE for an unknown authority", ev)
		}
		if n := srv.StreamCount(); n != 0 {
			t.Errorf("server saw %d streams, want 0", n)
		}
	})

	t.Run("OAuth token from Application Default Credentials", func(t *testing.T) {
		// Only the roots are swapped, by a dial option of the caller's:
		// the token still comes from google_default.
		cfg := credsEngineConfig(server)
		cfg.Transport = transport.GRPC(grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(ca.Pool, "")))
		eng, err := engine.New(cfg)
		if err != nil {
			t.Fatalf("engine.New: %v", err)
		}
		defer eng.Close()
		w := watchrec.New()
		defer eng.Watch(thing, "r1", w)()

		st := srv.WaitStream(t)
		if got, want := st.Metadata().Get("authorization"), []string{"Bearer ya29.test-access-token"}; !cmp.Equal(got, want) {
			t.Errorf("authorization = %q, want %q", got, want)
		}
		wantRequest(t, st.RecvT(t), thing, "", "", "r1")
	})
}

// TestCallCredsSeparateStreams: two authorities whose server entries
// differ only in call_creds must not share a stream, since each stream
// carries its entry's token.
func TestCallCredsSeparateStreams(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	srvTLS := serverTLS(ca.Server(t, "127.0.0.1").TLS, nil, nil)
	srv := startTLSADS(t, func(*tls.ClientHelloInfo) *tls.Config { return srvTLS })
	caFile := testpki.WriteFile(t, dir, "ca.pem", ca.CertPEM)
	exp := time.Now().Add(time.Hour)
	tokens := map[string]string{"a.example": jwtToken(exp) + "a", "b.example": jwtToken(exp) + "b"}
	server := func(authority string) bootstrap.ServerConfig {
		file := testpki.WriteFile(t, dir, authority+".token", []byte(tokens[authority]))
		return bootstrap.ServerConfig{
			URI:          srv.Addr(),
			ChannelCreds: []bootstrap.ChannelCreds{{Type: "tls", Config: tlsConfigJSON(caFile, "", "", "")}},
			CallCreds:    []bootstrap.CallCreds{{Type: "jwt_token_file", Config: json.RawMessage(`{"jwt_token_file":"` + file + `"}`)}},
		}
	}
	cfg := credsEngineConfig(bootstrap.InsecureServer("127.0.0.1:1"))
	cfg.Bootstrap.Authorities = map[string]bootstrap.Authority{
		"a.example": {Servers: []bootstrap.ServerConfig{server("a.example")}},
		"b.example": {Servers: []bootstrap.ServerConfig{server("b.example")}},
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	defer eng.Close()
	defer eng.Watch(thing, "xdstp://a.example/xdsengine.test.Thing/x", watchrec.New())()
	defer eng.Watch(thing, "xdstp://b.example/xdsengine.test.Thing/x", watchrec.New())()

	got := map[string]bool{}
	for range 2 {
		got[strings.Join(srv.WaitStream(t).Metadata().Get("authorization"), ",")] = true
	}
	want := map[string]bool{"Bearer " + tokens["a.example"]: true, "Bearer " + tokens["b.example"]: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tokens on the streams mismatch (-want +got):\n%s", diff)
	}
}

// headerCreds sends one header with every call, over any channel.
type headerCreds struct{ k, v string }

func (h headerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{h.k: h.v}, nil
}

func (headerCreds) RequireTransportSecurity() bool { return false }

// TestCustomCredentialsType: a call credentials type of the program's own,
// passed by value to the parser and to the transport, reaches the server.
func TestCustomCredentialsType(t *testing.T) {
	creds := bootstrap.DefaultCredentials().WithCallCreds(bootstrap.CallCredsType{
		Name: "tenant_header",
		Build: func(config json.RawMessage) (credentials.PerRPCCredentials, error) {
			var c struct{ Tenant string }
			err := json.Unmarshal(config, &c)
			return headerCreds{"x-tenant", c.Tenant}, err
		},
	})
	srv := scriptedads.Start(t)
	bs, err := bootstrap.Parser{Credentials: creds}.Parse(fmt.Appendf(nil, `{"xds_servers": [{"server_uri": %q,
		"channel_creds": [{"type": "insecure"}], "call_creds": [{"type": "tenant_header", "config": {"tenant": "blue"}}]}],
		"node": {"id": %q}}`, srv.Addr(), nodeID))
	if err != nil {
		t.Fatal(err)
	}
	cfg := credsEngineConfig()
	cfg.Bootstrap = bs
	cfg.Transport = transport.GRPCWithCredentials(creds)
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	eng.Watch(thing, "a", watchrec.New())
	st := srv.WaitStream(t)
	st.RecvT(t)
	if got := st.Metadata().Get("x-tenant"); !slices.Equal(got, []string{"blue"}) {
		t.Fatalf("x-tenant = %q, want [blue]", got)
	}
}
