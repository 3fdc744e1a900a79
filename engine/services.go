package engine

import (
	"log/slog"
	"sync"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/transport"
)

// What a client of another xDS service on the same servers needs from the
// engine: package lrs reports load with it, over the engine's own
// connections, node, clock and backoff, so that load reporting needs no
// configuration of its own.

// Node returns the node the engine sends in the first request of each
// stream (id, cluster, locality, metadata, user agent, client features),
// as a copy the caller may modify.
func (e *Engine) Node() *corepb.Node { return proto.Clone(e.node).(*corepb.Node) }

// Transport returns the transport to server that the engine's own
// streams to it use, shared: one connection per server entry for every
// xDS service on it, as gRPC keeps (load reporting to "self" rides the
// ADS connection). release gives it back; the connection closes with its
// last user, and with the engine. After Close, Transport fails with
// codes.Unavailable.
func (e *Engine) Transport(server bootstrap.ServerConfig) (t transport.Transport, release func(), err error) {
	e.lock()
	defer e.unlock()
	if e.closed.Load() {
		return nil, nil, status.Error(codes.Unavailable, "engine: closed")
	}
	key := serverKey(server)
	st := e.acquireTransportLocked(key, server)
	if st.err != nil {
		e.releaseTransportLocked(key)
		return nil, nil, st.err
	}
	var once sync.Once
	return st.t, func() {
		once.Do(func() {
			e.lock()
			e.releaseTransportLocked(key)
			e.unlock()
		})
	}, nil
}

// sharedTransport is one server's transport and its users: the engine's
// channel to the server and the clients of other services on it.
type sharedTransport struct {
	t    transport.Transport
	err  error // why it could not be built
	refs int
}

// acquireTransportLocked returns the transport to a server, built on first
// use.
func (e *Engine) acquireTransportLocked(key string, s bootstrap.ServerConfig) *sharedTransport {
	st := e.transports[key]
	if st == nil {
		st = &sharedTransport{}
		st.t, st.err = e.cfg.Transport.Build(s, transport.Options{MaxResponseBytes: e.maxResponseBytes})
		if st.err != nil {
			e.log.Error("xDS transport", "server", s.URI, "error", st.err)
		}
		e.transports[key] = st
	}
	st.refs++
	return st
}

// releaseTransportLocked gives a transport back; its last user closes it,
// in the background: closing a gRPC connection can take a moment, and
// not under the lock. Close waits for it.
func (e *Engine) releaseTransportLocked(key string) {
	st := e.transports[key]
	if st == nil {
		return // closed with the engine
	}
	if st.refs--; st.refs > 0 {
		return
	}
	delete(e.transports, key)
	if st.t != nil {
		e.streamsRun.Add(1)
		go func() {
			defer e.streamsRun.Done()
			st.t.Close()
		}()
	}
}

// Clock returns the engine's clock (Config.Clock, or the wall clock).
func (e *Engine) Clock() Clock { return e.clock }

// Logger returns the engine's logger (Config.Logger; it discards when
// none was given).
func (e *Engine) Logger() *slog.Logger { return e.log }

// Backoff returns how long the engine waits before its n-th retry of a
// failed stream (Config.Backoff, or [DefaultBackoff]).
func (e *Engine) Backoff(n int) time.Duration { return e.backoff(n) }
