package engine

import (
	"errors"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	"github.com/xdsengine/xdsengine/engine/internal/refcount"
)

// Pool hands out one shared Engine per data plane target (gRFC A71):
// callers of a target share its engine and cache, so a resource missing
// for one target sends only that target's engine to a fallback server.
// Engines are reference counted and closed with their last user. A Pool
// is safe for concurrent use.
type Pool struct {
	cfg     Config
	engines *refcount.Map[string, *Engine]
}

// NewPool returns a pool whose engines are built from cfg, each with
// Config.Target set to its target.
func NewPool(cfg Config) (*Pool, error) {
	if cfg.Store != nil {
		return nil, errors.New("engine: NewPool: Config.Store is one engine's; a pool's engines would share it (give each its own with New)")
	}
	// Validated once, so that Get fails only for reasons of its own.
	probe, err := New(cfg)
	if err != nil {
		return nil, err
	}
	probe.Close()
	return &Pool{cfg: cfg, engines: refcount.New[string, *Engine](ErrClosed)}, nil
}

// Get returns the engine of target, creating it on first use, and the
// function that releases this reference; release is idempotent.
func (p *Pool) Get(target string) (e *Engine, release func(), err error) {
	return p.engines.Get(target, func() (*Engine, error) {
		cfg := p.cfg
		cfg.Target = target
		return New(cfg)
	})
}

// Targets returns the targets with an engine, sorted.
func (p *Pool) Targets() []string { return p.engines.Keys() }

// Dump returns one CSDS ClientConfig per target, sorted by target, each
// with its target as client_scope (gRFC A71's CSDS change).
func (p *Pool) Dump() []*statuspb.ClientConfig {
	engines := p.engines.Values() // by target
	out := make([]*statuspb.ClientConfig, 0, len(engines))
	for _, e := range engines {
		out = append(out, e.Dump())
	}
	return out
}

// Close closes every engine of the pool; later Gets fail.
func (p *Pool) Close() error { return p.engines.Close() }
