package csds

import (
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	"github.com/xdsengine/xdsengine/engine"
)

// Source is what a CSDS [Server] reports: the xDS clients of a process,
// one ClientConfig each.
//
// ClientConfigs is called once per CSDS request, from any goroutine, so it
// must be safe for concurrent use. Each ClientConfig should have its
// client_scope set (gRFC A71: the data plane target the client serves),
// because that is how an operator tells several clients of one process
// apart. The returned messages become the server's: it sends them without
// copying, so the source must not modify them afterwards.
//
// There is no error result, on purpose: gRPC answers with an empty
// response, not an error, when it has no xDS client, and a source does the
// same by returning nothing for a client it cannot dump.
type Source interface {
	ClientConfigs() []*statuspb.ClientConfig
}

// SourceFunc adapts a function to a [Source], for sources other than an
// engine or a pool (several pools, or a filtered view of one).
type SourceFunc func() []*statuspb.ClientConfig

// ClientConfigs calls f.
func (f SourceFunc) ClientConfigs() []*statuspb.ClientConfig { return f() }

// ForEngine reports one engine: a single ClientConfig from
// [engine.Engine.Dump], whose client_scope is the engine's Config.Target.
// A closed engine keeps reporting the cache it had when it was closed, as
// Dump does; use [ForPool] for engines that come and go. A nil engine
// panics here, at wiring time, rather than on the first request.
func ForEngine(e *engine.Engine) Source {
	if e == nil {
		panic("csds: ForEngine(nil)")
	}
	return SourceFunc(func() []*statuspb.ClientConfig {
		return []*statuspb.ClientConfig{e.Dump()}
	})
}

// ForPool reports every engine of a pool, one ClientConfig per target,
// sorted by target ([engine.Pool.Dump]). Engines appear when first got and
// disappear with their last user; a closed pool, or one with no engine
// yet, reports none, so the response is empty, as gRPC's is before any
// xDS client exists. A nil pool panics here, as in [ForEngine].
func ForPool(p *engine.Pool) Source {
	if p == nil {
		panic("csds: ForPool(nil)")
	}
	return SourceFunc(p.Dump)
}
