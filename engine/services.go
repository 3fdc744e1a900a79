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
	"github.com/xdsengine/xdsengine/engine/internal/transports"
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
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return nil, nil, status.Error(codes.Unavailable, "engine: closed")
	}
	key := transports.Key(server)
	t, err = e.transports.Acquire(key, server)
	if err != nil {
		e.transports.Release(key)
		return nil, nil, err
	}
	var once sync.Once
	return t, func() {
		once.Do(func() {
			e.mu.Lock()
			e.transports.Release(key)
			e.mu.Unlock()
		})
	}, nil
}

// Clock returns the engine's clock (Config.Clock, or the wall clock).
func (e *Engine) Clock() Clock { return e.clock }

// Logger returns the engine's logger (Config.Logger; it discards when
// none was given).
func (e *Engine) Logger() *slog.Logger { return e.log }

// Backoff returns how long the engine waits before its n-th retry of a
// failed stream (Config.Backoff, or [DefaultBackoff]).
func (e *Engine) Backoff(n int) time.Duration { return e.backoff(n) }
