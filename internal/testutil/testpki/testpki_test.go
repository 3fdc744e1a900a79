package testpki_test

import (
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/internal/testutil/testpki"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMutualTLS checks that what the package makes passes a real mTLS
// handshake, and that another CA's client is refused.
func TestMutualTLS(t *testing.T) {
	ca := testpki.NewCA(t, "ca")
	other := testpki.NewCA(t, "other")
	srv := ca.Server(t, "localhost", "127.0.0.1")
	tests := []struct {
		name    string
		client  testpki.Leaf
		wantErr bool
	}{
		{name: "same CA", client: ca.Client(t, "c")},
		{name: "other CA", client: other.Client(t, "c"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
				Certificates: []tls.Certificate{srv.TLS},
				ClientCAs:    ca.Pool,
				ClientAuth:   tls.RequireAndVerifyClientCert,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			done := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					done <- err
					return
				}
				defer c.Close()
				done <- c.(*tls.Conn).Handshake()
			}()
			conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
				ServerName:   "127.0.0.1",
				RootCAs:      ca.Pool,
				Certificates: []tls.Certificate{tt.client.TLS},
			})
			if err == nil {
				// TLS 1.3 reports a refused client certificate on the
				// first read.
				_, err = conn.Read(make([]byte, 1))
				if err == io.EOF {
					err = nil
				}
				conn.Close()
			}
			serverErr := <-done
			if got := serverErr != nil; got != tt.wantErr {
				t.Errorf("server handshake error = %v, want error: %v (client: %v)", serverErr, tt.wantErr, err)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "ca")
	path := testpki.WriteFile(t, dir, "ca.pem", ca.CertPEM)
	testpki.WriteFile(t, dir, "ca.pem", ca.CertPEM) // replacing works
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		t.Errorf("%s holds no certificate", path)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("dir holds %d entries, want 1 (no temporary file left)", len(entries))
	}
}

func TestServiceAccountJSON(t *testing.T) {
	var sa struct {
		Type       string `json:"type"`
		PrivateKey string `json:"private_key"`
		TokenURI   string `json:"token_uri"`
	}
	if err := json.Unmarshal(testpki.ServiceAccountJSON(t, "http://127.0.0.1:1/token"), &sa); err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	if block == nil {
		t.Fatal("private_key holds no PEM block")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	// Google's OAuth JWT grant is RS256 only.
	if _, ok := key.(*rsa.PrivateKey); !ok || sa.Type != "service_account" || sa.TokenURI != "http://127.0.0.1:1/token" {
		t.Errorf("got type %q, key %T, token_uri %q", sa.Type, key, sa.TokenURI)
	}
}
