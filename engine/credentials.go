package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/google"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/jwt"
	"google.golang.org/grpc/credentials/tls/certprovider"
	"google.golang.org/grpc/credentials/tls/certprovider/pemfile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The credential types of the bootstrap, by name, each in three steps:
// validate looks only at the config (ParseBootstrap's part), check opens
// what the config names (engine.New's part, through ServerChecker), and
// build makes the credentials (the transport's part). They live in one
// value rather than in package-level registries so that a later
// user-supplied set can be handed to a transport as a plain value.

// credsFieldError is a problem with one field of a credentials config.
// field is the path inside the "config" object ("ca_certificate_file"),
// or empty for the object as a whole.
type credsFieldError struct {
	field string
	err   error
}

// at renders the problem under path, the JSON path of the config object.
func (e credsFieldError) at(path string) error {
	if e.field != "" {
		path += "." + e.field
	}
	return fmt.Errorf("%s: %w", path, e.err)
}

func credsErrorf(field, format string, args ...any) credsFieldError {
	return credsFieldError{field: field, err: fmt.Errorf(format, args...)}
}

// channelCredsType is one "channel_creds" type.
type channelCredsType struct {
	// insecure says the type's transport credentials report security
	// protocol "insecure", on which gRPC refuses call credentials that
	// require transport security.
	insecure bool
	// validate checks the config without touching the file system.
	validate func(config json.RawMessage) []credsFieldError
	// check opens whatever the (valid) config names; nil if nothing.
	check func(config json.RawMessage) []credsFieldError
	// build makes the credentials from a valid config.
	build func(config json.RawMessage) (builtChannelCreds, error)
}

// builtChannelCreds are built channel credentials: the transport part,
// per-RPC credentials that come with the type (google_default's OAuth
// token), and what stops any goroutine the type started.
type builtChannelCreds struct {
	transport credentials.TransportCredentials
	perRPC    credentials.PerRPCCredentials // may be nil
	close     func()                        // may be nil
}

// callCredsType is one "call_creds" type (gRFC A97).
type callCredsType struct {
	validate func(config json.RawMessage) []credsFieldError
	check    func(config json.RawMessage) []credsFieldError
	build    func(config json.RawMessage) (credentials.PerRPCCredentials, error)
}

// credsTypes are the credential types a transport knows.
type credsTypes struct {
	channel map[string]channelCredsType
	call    map[string]callCredsType
}

// builtinCredsTypes returns the types gRPC itself accepts in a bootstrap.
func builtinCredsTypes() credsTypes {
	return credsTypes{
		channel: map[string]channelCredsType{
			"insecure": {
				insecure: true,
				build: func(json.RawMessage) (builtChannelCreds, error) {
					return builtChannelCreds{transport: insecure.NewCredentials()}, nil
				},
			},
			"google_default": {
				// gRPC ignores the config of google_default.
				build: buildGoogleDefault,
			},
			"tls": {
				validate: func(c json.RawMessage) []credsFieldError { _, errs := parseTLSFiles(c, false); return errs },
				check:    checkTLSFiles,
				build:    buildTLS,
			},
		},
		call: map[string]callCredsType{
			"jwt_token_file": {
				validate: func(c json.RawMessage) []credsFieldError { _, errs := parseJWTTokenFile(c); return errs },
				check:    checkJWTTokenFile,
				build:    buildJWTTokenFile,
			},
		},
	}
}

// channelNames lists the channel credential types, sorted, for messages.
func (t credsTypes) channelNames() []string {
	return slices.Sorted(maps.Keys(t.channel))
}

// selectChannel returns the index of the entry the transport uses: the
// first whose type it knows, as gRPC chooses (gRFC A27).
func (t credsTypes) selectChannel(list []ChannelCreds) (int, bool) {
	for i, c := range list {
		if _, ok := t.channel[c.Type]; ok {
			return i, true
		}
	}
	return 0, false
}

func (t credsTypes) noChannelError(list []ChannelCreds) error {
	have := make([]string, len(list))
	for i, c := range list {
		have[i] = c.Type
	}
	return fmt.Errorf("channel_creds: %s", t.noChannelProblem(have))
}

// noChannelProblem says that none of the types named is supported.
func (t credsTypes) noChannelProblem(have []string) string {
	return fmt.Sprintf("no supported type: want one of %s; got %s", quoteAll(t.channelNames()), quoteAll(have))
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// serverCreds is what a server entry's credentials come to.
type serverCreds struct {
	channel builtChannelCreds
	call    []credentials.PerRPCCredentials
}

func (c serverCreds) close() {
	if c.channel.close != nil {
		c.channel.close()
	}
}

// checkServer reports, one error per problem, everything that would stop
// the server's credentials from being built or used; with files, it also
// opens what the configs name. Every error starts with its path inside the
// server entry.
func (t credsTypes) checkServer(s ServerConfig, files bool) []error {
	var errs []error
	i, ok := t.selectChannel(s.ChannelCreds)
	if !ok {
		return []error{t.noChannelError(s.ChannelCreds)}
	}
	sel := s.ChannelCreds[i]
	ct := t.channel[sel.Type]
	errs = appendCredsErrors(errs, fmt.Sprintf("channel_creds[%d].config", i), ct.validate, ct.check, sel.Config, files)
	for j, c := range s.CallCreds {
		kt, ok := t.call[c.Type]
		if !ok {
			continue // gRPC ignores call credentials it does not know (A97)
		}
		path := fmt.Sprintf("call_creds[%d]", j)
		if kt.validate != nil {
			if fe := kt.validate(c.Config); len(fe) > 0 {
				errs = appendFieldErrors(errs, path+".config", fe)
				continue
			}
		}
		if ct.insecure {
			// Built only to ask the credentials themselves; call
			// credentials are cheap to build and start nothing.
			pc, err := kt.build(c.Config)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
				continue
			}
			if pc.RequireTransportSecurity() {
				errs = append(errs, fmt.Errorf("%s: %q call credentials need a secure channel, but channel_creds[%d] is %q", path, c.Type, i, sel.Type))
			}
		}
		if files && kt.check != nil {
			errs = appendFieldErrors(errs, path+".config", kt.check(c.Config))
		}
	}
	return errs
}

func appendCredsErrors(errs []error, path string, validate, check func(json.RawMessage) []credsFieldError, config json.RawMessage, files bool) []error {
	var fe []credsFieldError
	if validate != nil {
		fe = validate(config)
	}
	if len(fe) == 0 && files && check != nil {
		fe = check(config)
	}
	return appendFieldErrors(errs, path, fe)
}

func appendFieldErrors(errs []error, path string, fe []credsFieldError) []error {
	for _, e := range fe {
		errs = append(errs, e.at(path))
	}
	return errs
}

// build makes the credentials of a server entry. Call credentials go on
// only when the channel credentials are secure: gRPC's own dial refuses
// the combination, and checkServer names the offending entry.
func (t credsTypes) build(s ServerConfig) (serverCreds, error) {
	if errs := t.checkServer(s, false); len(errs) > 0 {
		return serverCreds{}, errors.Join(errs...)
	}
	i, _ := t.selectChannel(s.ChannelCreds)
	sel := s.ChannelCreds[i]
	ch, err := t.channel[sel.Type].build(sel.Config)
	if err != nil {
		return serverCreds{}, fmt.Errorf("channel_creds[%d]: %w", i, err)
	}
	out := serverCreds{channel: ch}
	for j, c := range s.CallCreds {
		kt, ok := t.call[c.Type]
		if !ok {
			continue
		}
		pc, err := kt.build(c.Config)
		if err != nil {
			out.close()
			return serverCreds{}, fmt.Errorf("call_creds[%d]: %w", j, err)
		}
		out.call = append(out.call, pc)
	}
	return out, nil
}

// configFields decodes a credentials config object; absent means empty.
func configFields(config json.RawMessage) (map[string]json.RawMessage, []credsFieldError) {
	if len(config) == 0 || bsKind(config) == "null" {
		return nil, nil
	}
	if k := bsKind(config); k != "object" {
		return nil, []credsFieldError{credsErrorf("", "want object, got %s", k)}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(config, &m); err != nil {
		return nil, []credsFieldError{{err: err}}
	}
	return m, nil
}

// stringField reads an optional string field of a config.
func stringField(m map[string]json.RawMessage, name string, errs *[]credsFieldError) string {
	v, ok := bsField(m, name)
	if !ok {
		return ""
	}
	if k := bsKind(v); k != "string" {
		*errs = append(*errs, credsErrorf(name, "want string, got %s", k))
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		*errs = append(*errs, credsFieldError{field: name, err: err})
	}
	return s
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
func parseTLSFiles(config json.RawMessage, fileWatcher bool) (tlsFiles, []credsFieldError) {
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
	if v, ok := bsField(m, "refresh_interval"); ok {
		// protojson's own message is deliberately unstable, so it is not
		// repeated here.
		var d durationpb.Duration
		if err := protojson.Unmarshal(v, &d); err != nil {
			errs = append(errs, credsErrorf("refresh_interval", "want a protobuf JSON Duration string such as \"600s\", got %s", v))
		} else if f.refresh = d.AsDuration(); f.refresh < 0 {
			// grpc-go would start its file watcher with a negative ticker
			// and panic.
			errs = append(errs, credsErrorf("refresh_interval", "must not be negative, got %s", v))
		}
	}
	if !filesOK {
		return tlsFiles{}, errs
	}
	switch {
	case f.cert != "" && f.key == "":
		errs = append(errs, credsErrorf("private_key_file", "is required with certificate_file"))
	case f.key != "" && f.cert == "":
		errs = append(errs, credsErrorf("certificate_file", "is required with private_key_file"))
	case f.cert != "" && filepath.Dir(f.cert) != filepath.Dir(f.key):
		// gRPC C-core cannot tell a certificate from a key that does not
		// match it, so it reads both from one directory atomically; the
		// other languages keep the rule so that one file serves all.
		errs = append(errs, credsErrorf("private_key_file", "must be in the directory of certificate_file (%s), got %s", filepath.Dir(f.cert), f.key))
	case fileWatcher && f.cert == "" && f.ca == "":
		errs = append(errs, credsErrorf("", "needs certificate_file and private_key_file, or ca_certificate_file, or all three"))
	}
	if errs != nil {
		return tlsFiles{}, errs
	}
	return f, nil
}

// checkTLSFiles reads the files as the file watcher will, so that a
// missing or malformed one fails engine.New instead of every connection.
func checkTLSFiles(config json.RawMessage) []credsFieldError {
	f, errs := parseTLSFiles(config, false)
	if errs != nil {
		return errs
	}
	if f.ca != "" {
		if data, err := os.ReadFile(f.ca); err != nil {
			errs = append(errs, credsFieldError{field: "ca_certificate_file", err: err})
		} else if !x509.NewCertPool().AppendCertsFromPEM(data) {
			errs = append(errs, credsErrorf("ca_certificate_file", "%s: no PEM certificate", f.ca))
		}
	}
	if f.cert == "" {
		return errs
	}
	cert, certOK := readPEMFile(f.cert, "certificate_file", "certificate", func(t string) bool { return t == "CERTIFICATE" }, &errs)
	key, keyOK := readPEMFile(f.key, "private_key_file", "private key", func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") }, &errs)
	if certOK && keyOK {
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			errs = append(errs, credsErrorf("private_key_file", "%s with certificate_file %s: %w", f.key, f.cert, err))
		}
	}
	return errs
}

// readPEMFile reads a file that must hold a PEM block of a wanted type,
// reporting the problem under field.
func readPEMFile(path, field, what string, typeOK func(string) bool, errs *[]credsFieldError) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		*errs = append(*errs, credsFieldError{field: field, err: err})
		return nil, false
	}
	if !hasPEMBlock(data, typeOK) {
		*errs = append(*errs, credsErrorf(field, "%s: no PEM %s", path, what))
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
func buildTLS(config json.RawMessage) (builtChannelCreds, error) {
	f, errs := parseTLSFiles(config, false)
	if errs != nil {
		return builtChannelCreds{}, errs[0].at("config")
	}
	if f.cert == "" && f.ca == "" {
		return builtChannelCreds{transport: credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})}, nil
	}
	p, err := pemfile.NewProvider(pemfile.Options{CertFile: f.cert, KeyFile: f.key, RootFile: f.ca, RefreshDuration: f.refresh})
	if err != nil {
		return builtChannelCreds{}, err
	}
	return builtChannelCreds{transport: &watchedTLS{provider: p}, close: sync.OnceFunc(p.Close)}, nil
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

// buildGoogleDefault makes gRPC's Google default credentials: TLS with
// the system's roots (ALTS only toward DirectPath backends, which an xDS
// server is not) and OAuth tokens from Application Default Credentials.
// Off Google Cloud, without ADC, gRPC logs a warning and sends no token,
// as it does for its own xDS channels.
func buildGoogleDefault(json.RawMessage) (builtChannelCreds, error) {
	b := google.NewDefaultCredentials()
	if b == nil || b.TransportCredentials() == nil {
		return builtChannelCreds{}, errors.New("google_default: gRPC built no credentials")
	}
	return builtChannelCreds{transport: b.TransportCredentials(), perRPC: b.PerRPCCredentials()}, nil
}

// parseJWTTokenFile validates a jwt_token_file config (gRFC A97):
// "jwt_token_file" is required.
func parseJWTTokenFile(config json.RawMessage) (string, []credsFieldError) {
	m, errs := configFields(config)
	if errs != nil {
		return "", errs
	}
	path := stringField(m, "jwt_token_file", &errs)
	if errs == nil && path == "" {
		errs = append(errs, credsErrorf("jwt_token_file", "is required"))
	}
	return path, errs
}

// checkJWTTokenFile only reads the file, without judging the token: it may
// expire and be replaced at any time, and gRPC reads the file again as
// needed.
func checkJWTTokenFile(config json.RawMessage) []credsFieldError {
	path, errs := parseJWTTokenFile(config)
	if errs != nil {
		return errs
	}
	if _, err := os.ReadFile(path); err != nil {
		return []credsFieldError{{field: "jwt_token_file", err: err}}
	}
	return nil
}

func buildJWTTokenFile(config json.RawMessage) (credentials.PerRPCCredentials, error) {
	path, errs := parseJWTTokenFile(config)
	if errs != nil {
		return nil, errs[0].at("config")
	}
	return jwt.NewTokenFileCallCredentials(path)
}
