package bootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/tls/certprovider"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/registry"
)

// tlsType is the "tls" channel credentials (gRFC A65).
var tlsType = ChannelCredsType{
	Name:     "tls",
	Validate: func(c json.RawMessage) []*registry.FieldError { _, errs := parseTLSFiles(c, false); return errs },
	Check:    checkTLSFiles,
	Build:    buildTLS,
}

// tlsFiles is the config of the "tls" channel credentials (gRFC A65) and
// of the "file_watcher" certificate provider (gRFC A29), which share it.
type tlsFiles struct {
	cert, key, ca string
	// refresh is how often the files are read again; zero leaves it to
	// grpc-go's file watcher, as a "0s" in the bootstrap does in gRPC.
	refresh time.Duration
}

// tlsDefaultRefresh is A65's default refresh_interval.
const tlsDefaultRefresh = 10 * time.Minute

// parseTLSFiles validates a tls or file_watcher config as grpc-go does
// (its file watcher's rules): the key and certificate come together and
// from one directory, and refresh_interval is a protobuf JSON Duration.
// A file watcher also needs at least one file; tls does not, and then
// means TLS with the system's roots. Unknown fields are ignored, and so is
// spiffe_trust_bundle_map_file, which grpc-go reads only behind an
// experimental switch.
func parseTLSFiles(config json.RawMessage, fileWatcher bool) (tlsFiles, []*registry.FieldError) {
	m, errs := configFields(config)
	if errs != nil {
		return tlsFiles{}, errs
	}
	before := len(errs)
	f := tlsFiles{
		cert:    stringField(m, "certificate_file", &errs),
		key:     stringField(m, "private_key_file", &errs),
		ca:      stringField(m, "ca_certificate_file", &errs),
		refresh: tlsDefaultRefresh,
	}
	filesOK := len(errs) == before
	if v, ok := jsonField(m, "refresh_interval"); ok {
		// protojson's own message is deliberately unstable, so it is not
		// repeated here.
		var d durationpb.Duration
		if err := protojson.Unmarshal(v, &d); err != nil {
			errs = append(errs, fieldErrorf("refresh_interval", "want a protobuf JSON Duration string such as \"600s\", got %s", v))
		} else if f.refresh = d.AsDuration(); f.refresh < 0 {
			// grpc-go would start its file watcher with a negative ticker
			// and panic.
			errs = append(errs, fieldErrorf("refresh_interval", "must not be negative, got %s", v))
		}
	}
	if !filesOK {
		return tlsFiles{}, errs
	}
	switch {
	case f.cert != "" && f.key == "":
		errs = append(errs, fieldErrorf("private_key_file", "is required with certificate_file"))
	case f.key != "" && f.cert == "":
		errs = append(errs, fieldErrorf("certificate_file", "is required with private_key_file"))
	case f.cert != "" && filepath.Dir(f.cert) != filepath.Dir(f.key):
		// gRPC C-core cannot tell a certificate from a key that does not
		// match it, so it reads both from one directory atomically; the
		// other languages keep the rule so that one file serves all.
		errs = append(errs, fieldErrorf("private_key_file", "must be in the directory of certificate_file (%s), got %s", filepath.Dir(f.cert), f.key))
	case fileWatcher && f.cert == "" && f.ca == "":
		errs = append(errs, fieldErrorf("", "needs certificate_file and private_key_file, or ca_certificate_file, or all three"))
	}
	if errs != nil {
		return tlsFiles{}, errs
	}
	return f, nil
}

// checkTLSFiles reads the files as the file watcher will, so that a
// missing or malformed one fails when an engine is built instead of at
// every connection.
func checkTLSFiles(config json.RawMessage) []*registry.FieldError {
	f, errs := parseTLSFiles(config, false)
	if errs != nil {
		return errs
	}
	if f.ca != "" {
		if data, err := os.ReadFile(f.ca); err != nil {
			errs = append(errs, &registry.FieldError{Field: "ca_certificate_file", Err: err})
		} else if !x509.NewCertPool().AppendCertsFromPEM(data) {
			errs = append(errs, fieldErrorf("ca_certificate_file", "%s: no PEM certificate", f.ca))
		}
	}
	if f.cert == "" {
		return errs
	}
	cert, certOK := readPEMFile(f.cert, "certificate_file", "certificate", func(t string) bool { return t == "CERTIFICATE" }, &errs)
	key, keyOK := readPEMFile(f.key, "private_key_file", "private key", func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }, &errs)
	if certOK && keyOK {
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			errs = append(errs, fieldErrorf("private_key_file", "%s with certificate_file %s: %w", f.key, f.cert, err))
		}
	}
	return errs
}

// readPEMFile reads a file that must hold a PEM block of a wanted type,
// reporting the problem under field.
func readPEMFile(path, field, what string, typeOK func(string) bool, errs *[]*registry.FieldError) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		*errs = append(*errs, &registry.FieldError{Field: field, Err: err})
		return nil, false
	}
	if !hasPEMBlock(data, typeOK) {
		*errs = append(*errs, fieldErrorf(field, "%s: no PEM %s", path, what))
		return nil, false
	}
	return data, true
}

func hasPEMBlock(data []byte, typeOK func(string) bool) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if typeOK(b.Type) {
			return true
		}
	}
}

// buildTLS makes tls channel credentials. With files, grpc-go's file
// watcher re-reads them every refresh_interval and each new connection's
// handshake uses what it read last, so rotated certificates take effect
// without a restart (gRFC A65). Without files it is TLS with the system's
// roots.
func buildTLS(config json.RawMessage) (BuiltCreds, error) {
	f, errs := parseTLSFiles(config, false)
	if errs != nil {
		return BuiltCreds{}, registry.FieldWithin("config", errs[0])
	}
	if f.cert == "" && f.ca == "" {
		return BuiltCreds{Transport: credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})}, nil
	}
	p, err := pemfile.NewProvider(pemfile.Options{CertFile: f.cert, KeyFile: f.key, RootFile: f.ca, RefreshDuration: f.refresh})
	if err != nil {
		return BuiltCreds{}, err
	}
	return BuiltCreds{Transport: &watchedTLS{provider: p}, Close: sync.OnceFunc(p.Close)}, nil
}

// watchedTLS is client TLS whose certificates and roots come from a
// certificate provider at each handshake. Plain credentials.NewTLS cannot
// change its roots once built, hence a fresh tls.Config per connection.
type watchedTLS struct {
	provider certprovider.Provider
}

func (c *watchedTLS) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	// Waits for the first read of the files, which has normally happened
	// long before: the watcher reads them as soon as it starts.
	km, err := c.provider.KeyMaterial(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("tls channel credentials: certificate files not loaded: %w", err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: km.Roots, Certificates: km.Certs}
	return credentials.NewTLS(cfg).ClientHandshake(ctx, authority, conn)
}

func (c *watchedTLS) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("tls channel credentials of an xDS bootstrap are client-side only")
}

func (c *watchedTLS) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (c *watchedTLS) Clone() credentials.TransportCredentials {
	return &watchedTLS{provider: c.provider}
}

// OverrideServerName is deprecated in gRPC and unused by it; the name
// comes from the server URI.
func (c *watchedTLS) OverrideServerName(string) error {
	return errors.New("tls channel credentials of an xDS bootstrap take the server name from server_uri")
}
