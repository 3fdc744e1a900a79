package engine

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// GRPCTransport returns the default TransportBuilder: one gRPC client
// connection per xDS server, with the first channel credentials of the
// server's list that it supports ("insecure", or "tls" with optional
// "ca_certificate_file", "certificate_file" and "private_key_file"), plus
// any dial options given here (for example a custom dialer in tests).
func GRPCTransport(opts ...grpc.DialOption) TransportBuilder {
	return grpcTransportBuilder{opts: opts}
}

type grpcTransportBuilder struct{ opts []grpc.DialOption }

func (b grpcTransportBuilder) Build(s ServerConfig, o TransportOptions) (Transport, error) {
	creds, err := transportCredentials(s.ChannelCreds)
	if err != nil {
		return nil, fmt.Errorf("xDS server %s: %w", s.URI, err)
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, b.opts...)
	cc, err := grpc.NewClient(s.URI, opts...)
	if err != nil {
		return nil, fmt.Errorf("xDS server %s: %w", s.URI, err)
	}
	return &grpcTransport{cc: cc, maxRecv: o.MaxResponseBytes}, nil
}

// SupportedChannelCreds reports whether the default transport supports a
// channel_creds type.
func SupportedChannelCreds(typ string) bool { return typ == "insecure" || typ == "tls" }

func transportCredentials(list []ChannelCreds) (credentials.TransportCredentials, error) {
	var seen []string
	for _, c := range list {
		switch c.Type {
		case "insecure":
			return insecure.NewCredentials(), nil
		case "tls":
			return tlsCredentials(c.Config)
		}
		seen = append(seen, c.Type)
	}
	return nil, fmt.Errorf("no supported channel credentials (want insecure or tls, have [%s])", strings.Join(seen, ", "))
}

func tlsCredentials(raw json.RawMessage) (credentials.TransportCredentials, error) {
	var cfg struct {
		CA   string `json:"ca_certificate_file"`
		Cert string `json:"certificate_file"`
		Key  string `json:"private_key_file"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, fmt.Errorf("tls channel credentials config: %w", err)
		}
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CA != "" {
		pem, err := os.ReadFile(cfg.CA)
		if err != nil {
			return nil, fmt.Errorf("tls ca_certificate_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca_certificate_file %s: no PEM certificate", cfg.CA)
		}
		tc.RootCAs = pool
	}
	if cfg.Cert != "" || cfg.Key != "" {
		pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("tls certificate_file/private_key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(tc), nil
}

type grpcTransport struct {
	cc      *grpc.ClientConn
	maxRecv int
}

var adsStreamDesc = &grpc.StreamDesc{StreamName: "StreamAggregatedResources", ClientStreams: true, ServerStreams: true}

// NewStream opens the stream without wait-for-ready: while the server is
// unreachable it fails, which is how the engine learns of it (gRFC A57,
// as grpc-go and grpc-java do).
func (t *grpcTransport) NewStream(ctx context.Context, method string) (Stream, error) {
	opts := []grpc.CallOption{grpc.ForceCodecV2(rawCodec{})}
	if t.maxRecv > 0 {
		opts = append(opts, grpc.MaxCallRecvMsgSize(t.maxRecv))
	}
	s, err := t.cc.NewStream(ctx, adsStreamDesc, method, opts...)
	if err != nil {
		return nil, err
	}
	return grpcStream{s: s, maxRecv: t.maxRecv}, nil
}

func (t *grpcTransport) Close() error { return t.cc.Close() }

type grpcStream struct {
	s       grpc.ClientStream
	maxRecv int
}

func (g grpcStream) Send(b []byte) error { return g.s.SendMsg(b) }

func (g grpcStream) Recv() ([]byte, error) {
	var b []byte
	if err := g.s.RecvMsg(&b); err != nil {
		if status.Code(err) == codes.ResourceExhausted {
			if size, ok := oversizedMessageSize(status.Convert(err).Message()); ok {
				return nil, &ResponseTooLargeError{Size: size, Limit: g.maxRecv, Err: err}
			}
		}
		return nil, err
	}
	return b, nil
}

// grpcTooLarge matches grpc-go's message for a received message over the
// limit, before or after decompression, which is the only place that
// tells the message's size.
var grpcTooLarge = regexp.MustCompile(`received message (?:after decompression )?larger than max \((\d+) vs\. \d+\)`)

// oversizedMessageSize reports whether a RESOURCE_EXHAUSTED message is
// gRPC's "received message larger than max", and the size it names.
func oversizedMessageSize(msg string) (int, bool) {
	m := grpcTooLarge.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, true
	}
	return n, true
}

// rawCodec moves already serialized messages: the engine marshals and
// unmarshals itself, so the transport stays ignorant of xDS.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*p = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }
