package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// GRPCTransport returns the default TransportBuilder: one gRPC client
// connection per xDS server, plus any dial options given here (for example
// a custom dialer in tests), with the credentials the server's bootstrap
// entry names, understood as gRPC understands them:
//
//   - "channel_creds": the first entry of a type listed below is used, the
//     others are ignored (gRFC A27).
//   - "insecure": plaintext; its config is ignored.
//   - "google_default": gRPC's Google default credentials
//     (google.golang.org/grpc/credentials/google), as Traffic Director and
//     Cloud Service Mesh bootstraps use: TLS with the system's roots and
//     OAuth tokens from Application Default Credentials. Off Google Cloud
//     without ADC, the channel is TLS without a token; its config is
//     ignored.
//   - "tls" (gRFC A65): TLS, with config "ca_certificate_file" (roots;
//     default the system's), "certificate_file" and "private_key_file"
//     (a client certificate for mTLS, both or neither, in one directory),
//     and "refresh_interval" (a protobuf JSON Duration, default "600s").
//     The files are re-read every refresh_interval by grpc-go's
//     file_watcher provider, and each new connection uses what was read
//     last, so rotated certificates need no restart. The watcher stops
//     when the transport closes.
//   - "call_creds" (gRFC A97): every entry of a type listed below is used,
//     others are ignored. "jwt_token_file", config {"jwt_token_file":
//     path}, sends "authorization: Bearer <token>" read from the file
//     (google.golang.org/grpc/credentials/jwt), re-read before the token's
//     "exp". gRPC sends such tokens only over a secure channel: grpc-go
//     accepts a bootstrap with call_creds on "insecure" channel_creds but
//     then cannot create the channel ("the credentials require transport
//     level security"), so no request ever reaches the server. This
//     transport refuses the same combination, and reports it from
//     CheckServer, so that [New] fails at once. (grpc-go reads call_creds
//     only with GRPC_EXPERIMENTAL_XDS_BOOTSTRAP_CALL_CREDS=true; this
//     transport always does.)
//
// The builder implements [ServerChecker]: it validates the configs of the
// credentials it would use and reads every file they name, so that a
// missing, unreadable or malformed file, or a certificate that does not
// match its key, fails [New] with the field and the file named.
func GRPCTransport(opts ...grpc.DialOption) TransportBuilder {
	return grpcTransportBuilder{opts: opts, creds: builtinCredsTypes()}
}

type grpcTransportBuilder struct {
	opts  []grpc.DialOption
	creds credsTypes
}

func (b grpcTransportBuilder) Build(s ServerConfig, o TransportOptions) (Transport, error) {
	sc, err := b.creds.build(s)
	if err != nil {
		return nil, fmt.Errorf("xDS server %s: %w", s.URI, err)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(sc.channel.transport)}
	if sc.channel.perRPC != nil {
		opts = append(opts, grpc.WithPerRPCCredentials(sc.channel.perRPC))
	}
	for _, c := range sc.call {
		opts = append(opts, grpc.WithPerRPCCredentials(c))
	}
	cc, err := grpc.NewClient(s.URI, append(opts, b.opts...)...)
	if err != nil {
		sc.close()
		return nil, fmt.Errorf("xDS server %s: %w", s.URI, err)
	}
	return &grpcTransport{cc: cc, maxRecv: o.MaxResponseBytes, closeCreds: sc.close}, nil
}

// CheckServer implements [ServerChecker].
func (b grpcTransportBuilder) CheckServer(s ServerConfig) error {
	return errors.Join(b.creds.checkServer(s, true)...)
}

// SupportedChannelCreds reports whether the default transport supports a
// channel_creds type: "google_default", "insecure" or "tls".
func SupportedChannelCreds(typ string) bool {
	_, ok := builtinCredsTypes().channel[typ]
	return ok
}

type grpcTransport struct {
	cc         *grpc.ClientConn
	maxRecv    int
	closeCreds func() // stops the credentials' file watchers
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

func (t *grpcTransport) Close() error {
	err := t.cc.Close()
	t.closeCreds()
	return err
}

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
