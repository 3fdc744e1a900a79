package engine

import (
	"log/slog"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// What a client of another xDS service on the same servers needs from the
// engine: package lrs reports load with it, over the engine's own
// transport, credentials, node, clock and backoff, so that load reporting
// needs no configuration of its own.

// Node returns the node the engine sends in the first request of each
// stream (id, cluster, locality, metadata, user agent, client features),
// as a copy the caller may modify.
func (e *Engine) Node() *corepb.Node { return proto.Clone(e.node).(*corepb.Node) }

// ServerConfig returns the bootstrap's configuration of the server whose
// URI is uri, among the top-level servers and every authority's: the
// server an [Update] came from (Update.ServerURI) is the one its
// resource's "self" config source means.
func (e *Engine) ServerConfig(uri string) (bootstrap.ServerConfig, bool) {
	b := e.cfg.Bootstrap
	for _, s := range b.Servers {
		if s.URI == uri {
			return s, true
		}
	}
	for _, a := range b.Authorities {
		for _, s := range a.Servers {
			if s.URI == uri {
				return s, true
			}
		}
	}
	return bootstrap.ServerConfig{}, false
}

// NewServerTransport builds a transport to server the way the engine
// builds its own (Config.Transport, with the bootstrap's credentials). The
// caller owns it and closes it.
func (e *Engine) NewServerTransport(server bootstrap.ServerConfig) (Transport, error) {
	return e.cfg.Transport.Build(server, TransportOptions{MaxResponseBytes: e.maxResponseBytes})
}

// Clock returns the engine's clock (Config.Clock, or the wall clock).
func (e *Engine) Clock() Clock { return e.clock }

// Logger returns the engine's logger (Config.Logger; it discards when
// none was given).
func (e *Engine) Logger() *slog.Logger { return e.log }

// Backoff returns how long the engine waits before its n-th retry of a
// failed stream (Config.Backoff, or [DefaultBackoff]).
func (e *Engine) Backoff(n int) time.Duration { return e.backoff(n) }
