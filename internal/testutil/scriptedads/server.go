package scriptedads

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// waitTimeout bounds the *T helpers' waits: long enough for a loaded
// machine running -race, short enough that a hung test fails with a
// message instead of the global test timeout.
const waitTimeout = 10 * time.Second

// errClosed is what waits return once the server is closed: nothing can
// arrive any more.
var errClosed = errors.New("scriptedads: server closed")

// Option configures Start.
type Option func(*config)

type config struct {
	grpcOpts []grpc.ServerOption
}

// WithServerOptions passes options to the underlying grpc.Server, for tests
// that need, for instance, a keepalive enforcement policy or TLS. The
// package always adds grpc.WaitForHandlers(true), which Close relies on.
func WithServerOptions(opts ...grpc.ServerOption) Option {
	return func(c *config) { c.grpcOpts = append(c.grpcOpts, opts...) }
}

// Recorded is a request as received by the server, tagged with the index
// of the stream it arrived on.
type Recorded struct {
	Stream int                           // the stream's Index
	Req    *discoverypb.DiscoveryRequest // as received, a copy of its own
}

// Server is a scripted ADS server. Its methods are safe for concurrent use.
type Server struct {
	ln        *gateListener
	gs        *grpc.Server
	wg        sync.WaitGroup // Serve and the streams' receiving goroutines
	closeOnce sync.Once

	mu      sync.Mutex
	streams []*Stream // in opening order; index == Stream.Index
	next    int       // streams[next:] have not been handed out yet
	// deltaStreams and nextDelta are the same for incremental streams.
	deltaStreams []*DeltaStream
	nextDelta    int
	failErr      error
	requests     []Recorded
	closed       bool
	// changed is closed and replaced when a stream opens or the server
	// closes, so that NextStream can wait without polling.
	changed chan struct{}
}

// Start starts a server on 127.0.0.1 with a port chosen by the system. The
// server is closed when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("scriptedads: listen: %v", err)
	}
	s := &Server{
		ln:      newGateListener(l),
		changed: make(chan struct{}),
	}
	s.gs = grpc.NewServer(append(cfg.grpcOpts, grpc.WaitForHandlers(true))...)
	discoverypb.RegisterAggregatedDiscoveryServiceServer(s.gs, &service{s: s})
	s.wg.Go(func() { _ = s.gs.Serve(s.ln) })
	t.Cleanup(s.Close)
	return s
}

// Addr returns the address (host:port) clients dial. It does not change
// across Stop and Restart.
func (s *Server) Addr() string {
	return s.ln.Addr().String()
}

// NextStream returns the next stream not yet returned, in the order the
// streams were opened, waiting for one to open if need be. Streams ended
// by FailStreams are returned too (see Stream.Failed), so that a test sees
// every attempt the client made.
func (s *Server) NextStream(ctx context.Context) (*Stream, error) {
	for {
		s.mu.Lock()
		if s.next < len(s.streams) {
			st := s.streams[s.next]
			s.next++
			s.mu.Unlock()
			return st, nil
		}
		closed, ch := s.closed, s.changed
		s.mu.Unlock()
		if closed {
			return nil, errClosed
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// WaitStream is NextStream for at most 10 seconds; it fails the test if no
// stream opens in time.
func (s *Server) WaitStream(t testing.TB) *Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := s.NextStream(ctx)
	if err != nil {
		t.Fatalf("scriptedads: waiting for a stream (%d opened so far): %v", s.StreamCount(), err)
		return nil
	}
	return st
}

// StreamCount returns how many streams have been opened so far, including
// those ended by FailStreams.
func (s *Server) StreamCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

// FailStreams makes every stream opened from now on end at once with err,
// before any request is read: a server that accepts connections but is
// broken. err should be a status error (status.Error); any other error
// reaches the client as codes.Unknown. FailStreams(nil) turns this off.
// Streams already open are not affected.
func (s *Server) FailStreams(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failErr = err
}

// Requests returns every request received so far on any stream, in the
// order they arrived. The messages are copies the caller may modify.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.requests))
	for i, r := range s.requests {
		out[i] = Recorded{Stream: r.Stream, Req: proto.Clone(r.Req).(*discoverypb.DiscoveryRequest)}
	}
	return out
}

// Stop cuts connectivity: it closes every connection, which ends every
// open stream (the client sees codes.Unavailable), and until Restart
// accepts new connections only to close them at once, keeping the port so
// that Restart can reuse the address. It returns once every stream open at
// the time has ended.
func (s *Server) Stop() {
	s.ln.refuse(true)
	s.mu.Lock()
	streams := append([]*Stream(nil), s.streams...)
	deltas := append([]*DeltaStream(nil), s.deltaStreams...)
	s.mu.Unlock()
	for _, st := range streams {
		<-st.done
	}
	for _, st := range deltas {
		<-st.done
	}
}

// Restart undoes Stop: new connections are served again, on the same
// address.
func (s *Server) Restart() {
	s.ln.refuse(false)
}

// Close shuts the server down: it ends every stream, closes the listener
// and returns once every goroutine the server started has ended. It may be
// called more than once, and is called by the test's cleanup.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		// Stop with WaitForHandlers returns after every handler, and so
		// every wg.Add they made, which makes the wait below complete.
		s.gs.Stop()
		s.wg.Wait()
		s.mu.Lock()
		s.closed = true
		s.notifyLocked()
		s.mu.Unlock()
	})
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// service implements the ADS gRPC service on behalf of a Server.
type service struct {
	discoverypb.UnimplementedAggregatedDiscoveryServiceServer
	s *Server
}

func (svc *service) StreamAggregatedResources(ss discoverypb.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	s := svc.s
	st := newStream(ss.Context())
	s.mu.Lock()
	failErr := s.failErr
	st.index = len(s.streams)
	st.failed = failErr != nil
	s.streams = append(s.streams, st)
	s.notifyLocked()
	s.mu.Unlock()

	if failErr != nil {
		st.endRecv(failErr)
		close(st.served)
		close(st.done)
		return failErr
	}

	// Receiving runs in its own goroutine so that the handler can end the
	// stream (Close, Stop) while the client has nothing to send. That
	// goroutine sees Recv fail only once the handler has returned, so it,
	// not the handler, closes done.
	s.wg.Go(func() {
		for {
			req, err := ss.Recv()
			if err != nil {
				st.endRecv(err)
				break
			}
			s.mu.Lock()
			s.requests = append(s.requests, Recorded{Stream: st.index, Req: req})
			s.mu.Unlock()
			st.push(proto.Clone(req).(*discoverypb.DiscoveryRequest))
		}
		<-st.served
		close(st.done)
	})
	defer close(st.served)
	return st.serve(ss)
}

// gateListener is a listener that can refuse connections (accept and
// close them at once) and close every connection it handed out, so that
// the gRPC server can be cut off and reconnected without giving up its
// port.
type gateListener struct {
	net.Listener
	mu       sync.Mutex
	refusing bool
	conns    map[*gatedConn]struct{}
}

func newGateListener(l net.Listener) *gateListener {
	return &gateListener{Listener: l, conns: make(map[*gatedConn]struct{})}
}

func (l *gateListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.refusing {
			l.mu.Unlock()
			c.Close()
			continue
		}
		gc := &gatedConn{Conn: c, l: l}
		l.conns[gc] = struct{}{}
		l.mu.Unlock()
		return gc, nil
	}
}

// refuse sets whether new connections are refused; turning refusal on
// also closes every open connection.
func (l *gateListener) refuse(on bool) {
	l.mu.Lock()
	l.refusing = on
	var open []*gatedConn
	if on {
		for c := range l.conns {
			open = append(open, c)
		}
	}
	l.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

type gatedConn struct {
	net.Conn
	l *gateListener
}

func (c *gatedConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}
