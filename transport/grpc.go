package transport

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// GRPC returns the default Builder: one gRPC client
// connection per xDS server, with the credentials the server's bootstrap
// entry names, understood as gRPC understands them
// ([bootstrap.DefaultCredentials] lists the types and their meaning), plus
// any dial options given here (for example a custom dialer in tests). A
// stream interceptor among them sees each message serialized: a []byte,
// or a net.Buffers whose buffers are the message in order
// ([BuffersSender]).
//
// The builder implements [ServerChecker]: it validates the configs of the
// credentials it would use and reads every file they name, so that a
// missing, unreadable or malformed file, or a certificate that does not
// match its key, fails engine.New with the field and the file named.
func GRPC(opts ...grpc.DialOption) Builder {
	return GRPCWithCredentials(bootstrap.DefaultCredentials(), opts...)
}

// GRPCWithCredentials is [GRPC] with a set of credential
// types of the program's own, the same set its bootstrap was parsed with
// (bootstrap.Parser).
func GRPCWithCredentials(creds bootstrap.Credentials, opts ...grpc.DialOption) Builder {
	return grpcBuilder{opts: opts, creds: creds}
}

type grpcBuilder struct {
	opts  []grpc.DialOption
	creds bootstrap.Credentials
}

func (b grpcBuilder) Build(s bootstrap.ServerConfig, o Options) (Transport, error) {
	sc, err := b.creds.Build(s)
	if err != nil {
		return nil, fmt.Errorf("xDS server %s: %w", s.URI, err)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(sc.Transport)}
	for _, c := range sc.PerRPC {
		opts = append(opts, grpc.WithPerRPCCredentials(c))
	}
	cc, err := grpc.NewClient(s.URI, append(opts, b.opts...)...)
	if err != nil {
		sc.Close()
		return nil, fmt.Errorf("xDS server %s: %w", s.URI, err)
	}
	return &grpcTransport{cc: cc, maxRecv: o.MaxResponseBytes, closeCreds: sc.Close}, nil
}

// CheckServer implements [ServerChecker].
func (b grpcBuilder) CheckServer(s bootstrap.ServerConfig) error {
	return b.creds.Check(s)
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

// Recycle gives msg's memory to a later Recv, of this stream or another
// (messages.go).
func (g grpcStream) Recycle(msg []byte) { recycleMessage(msg) }

// received is what rawCodec reads a message into, in newMessage's memory.
type received struct{ msg []byte }

func (g grpcStream) Send(b []byte) error { return g.s.SendMsg(b) }

// SendBuffers hands the buffers to gRPC as they are (rawCodec): gRPC
// frames them without joining them, and keeps them until they are
// written, which BuffersSender allows.
func (g grpcStream) SendBuffers(msg net.Buffers) error { return g.s.SendMsg(msg) }

// CloseSend half-closes the stream: the server reads the end of the
// stream after every message sent. Package lrs waits for the server to
// end the stream after its final report, so that the report is read.
func (g grpcStream) CloseSend() error { return g.s.CloseSend() }

func (g grpcStream) Recv() ([]byte, error) {
	var r received
	if err := g.s.RecvMsg(&r); err != nil {
		if status.Code(err) == codes.ResourceExhausted {
			if size, ok := oversizedMessageSize(status.Convert(err).Message()); ok {
				return nil, &ResponseTooLargeError{Size: size, Limit: g.maxRecv, Err: err}
			}
		}
		return nil, err
	}
	return r.msg, nil
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
	switch m := v.(type) {
	case []byte:
		return mem.BufferSlice{mem.SliceBuffer(m)}, nil
	case net.Buffers:
		out := make(mem.BufferSlice, len(m))
		for i, b := range m {
			out[i] = mem.SliceBuffer(b)
		}
		return out, nil
	}
	return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch r := v.(type) {
	case *[]byte:
		*r = data.Materialize()
	case *received:
		r.msg = newMessage(data.Len())
		data.CopyTo(r.msg)
	default:
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	return nil
}

func (rawCodec) Name() string { return "proto" }
