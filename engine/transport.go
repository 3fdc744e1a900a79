package engine

import (
	"context"
	"time"
)

// ADSMethod is the full gRPC method name of the SotW ADS stream.
const ADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"

// TransportBuilder makes a Transport for one xDS server. The engine builds
// one transport per distinct server and closes it when no authority uses
// the server any more.
type TransportBuilder interface {
	Build(server ServerConfig) (Transport, error)
}

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
// with each other, but neither concurrently with itself.
type Stream interface {
	Send(msg []byte) error
	Recv() ([]byte, error)
}

// Clock is the engine's source of time; tests inject a fake one so that
// 15 s timers take microseconds.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed. stop
	// prevents the call if it has not started and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// RealClock returns the wall clock.
func RealClock() Clock { return realClock{} }
