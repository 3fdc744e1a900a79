package transport

import (
	"context"
	"fmt"
	"net"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// ADSMethod is the full gRPC method name of the State-of-the-World ADS
// stream.
const ADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"

// DeltaADSMethod is the full gRPC method name of the incremental ADS
// stream, opened for a server with features.NameDeltaXDS.
const DeltaADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"

// Builder makes a Transport for one xDS server. The engine builds
// one transport per distinct server and closes it when no authority uses
// the server any more.
type Builder interface {
	Build(server bootstrap.ServerConfig, opts Options) (Transport, error)
}

// Options are the engine's settings a transport must apply.
type Options struct {
	// MaxResponseBytes is the largest message a stream must accept. A
	// larger one ends the stream: Recv returns a *ResponseTooLargeError.
	MaxResponseBytes int
}

// DefaultMaxResponseBytes is the engine's default for
// Config.MaxResponseBytes: 128 MiB. gRPC's own default receive limit,
// 4 MiB, is too small for State-of-the-World responses of large meshes: a
// Cluster of a real mesh (TLS, outlier detection, metadata) serializes to
// 1-3 KiB, so a few thousand of them already exceed 4 MiB. 128 MiB holds
// some 50,000 such clusters in one response while still bounding what a
// misbehaving server can make a client buffer.
const DefaultMaxResponseBytes = 128 << 20

// ResponseTooLargeError is what Stream.Recv returns when a message exceeds
// Options.MaxResponseBytes. Size is the message's size when the
// transport knows it, else 0.
type ResponseTooLargeError struct {
	Size, Limit int
	Err         error // the transport's own error, if any
}

// Error names the size and the setting that limits it.
func (e *ResponseTooLargeError) Error() string {
	size := "a response"
	if e.Size > 0 {
		size = fmt.Sprintf("a response of %d bytes", e.Size)
	}
	return fmt.Sprintf("%s exceeds the receive limit of %d bytes (engine.Config.MaxResponseBytes)", size, e.Limit)
}

// Unwrap returns the transport's error.
func (e *ResponseTooLargeError) Unwrap() error { return e.Err }

// Transport is a connection to one xDS server. It knows nothing of xDS:
// the engine sends and receives serialized protocol messages.
type Transport interface {
	// NewStream opens a bidirectional stream for method. It should fail
	// rather than wait while the server is unreachable (gRFC A57: the
	// stream's failure is how the engine learns of it). Cancelling ctx
	// ends the stream.
	NewStream(ctx context.Context, method string) (Stream, error)
	// Close releases the transport. Streams it opened end.
	Close() error
}

// Stream is one open stream. Send and Recv may be called concurrently
// with each other, but neither concurrently with itself. The engine never
// modifies a message after passing it to Send, so a transport may keep it
// until it is written.
//
// A Stream may also implement [BuffersSender].
type Stream interface {
	Send(msg []byte) error
	Recv() ([]byte, error)
}

// BuffersSender is a [Stream] that can send a message given as several
// buffers, without the engine joining them first. The engine then sends a
// State-of-the-World request as two: its own fields, and the type's
// subscribed names, which every ACK repeats and which the engine keeps
// encoded between requests. An ACK then costs no copy of the names (15 KB
// for 1,000 names of 15 bytes, 73 KB for 1,000 xdstp names of 70), where
// Send gets a new message for each. The gRPC transport
// ([GRPC]) implements it.
//
// The message is the buffers' bytes in order. A buffer may be passed
// again in later messages, and neither the engine nor the transport may
// modify it; a transport may keep the buffers until they are written.
// SendBuffers is not called concurrently with Send, nor with itself.
type BuffersSender interface {
	SendBuffers(msg net.Buffers) error
}

// Recycler is a [Stream] that can read a message into the memory of one
// it returned before. The engine calls Recycle with each message Recv
// returned, once it has handled it: nothing it keeps refers to a
// message, and it never touches msg again. Recycle is called by the
// goroutine that calls Recv, between two calls of it. The gRPC transport
// ([GRPC]) implements it.
type Recycler interface {
	Recycle(msg []byte)
}

// LimitReceive returns s with Recv refusing a message over limit bytes, as
// a *ResponseTooLargeError: for a transport that does not enforce
// Options.MaxResponseBytes itself. A stream that takes buffers keeps
// doing so.
func LimitReceive(s Stream, limit int) Stream {
	limited := limitedStream{s, limit}
	if bs, ok := s.(BuffersSender); ok {
		return limitedBuffersStream{limited, bs}
	}
	return limited
}

type limitedStream struct {
	Stream
	limit int
}

// limitedBuffersStream is a limitedStream that keeps its stream's
// SendBuffers, which the wrapping would hide.
type limitedBuffersStream struct {
	limitedStream
	BuffersSender
}

// Recycle passes msg on to the stream it wraps, if that one recycles.
func (s limitedStream) Recycle(msg []byte) {
	if r, ok := s.Stream.(Recycler); ok {
		r.Recycle(msg)
	}
}

func (s limitedStream) Recv() ([]byte, error) {
	b, err := s.Stream.Recv()
	if err == nil && len(b) > s.limit {
		return nil, &ResponseTooLargeError{Size: len(b), Limit: s.limit}
	}
	return b, err
}
