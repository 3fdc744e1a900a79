package engine

import (
	"errors"
	"maps"
	"slices"
	"sync"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// Pool hands out one shared Engine per data plane target (gRFC A71):
// callers of a target share its engine and cache, so a resource missing
// for one target sends only that target's engine to a fallback server.
// Engines are reference counted and closed with their last user. A Pool
// is safe for concurrent use.
type Pool struct {
	cfg Config

	mu      sync.Mutex
	closed  bool
	engines map[string]*pooled // by target
}

// pooled is a target's engine and its users.
type pooled struct {
	e    *Engine
	refs int
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
	return &Pool{cfg: cfg, engines: make(map[string]*pooled)}, nil
}

// Get returns the engine of target, creating it on first use, and the
// function that releases this reference; release is idempotent. After
// Close, Get fails with ErrClosed.
func (p *Pool) Get(target string) (e *Engine, release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil, ErrClosed
	}
	pe := p.engines[target]
	if pe == nil {
		cfg := p.cfg
		cfg.Target = target
		if e, err = New(cfg); err != nil {
			return nil, nil, err
		}
		pe = &pooled{e: e}
		p.engines[target] = pe
	}
	pe.refs++
	return pe.e, sync.OnceFunc(func() { p.release(target, pe) }), nil
}

// release drops a reference; the last closes the engine, without the
// pool's lock.
func (p *Pool) release(target string, pe *pooled) {
	p.mu.Lock()
	pe.refs--
	last := pe.refs == 0 && p.engines[target] == pe
	if last {
		delete(p.engines, target)
	}
	p.mu.Unlock()
	if last {
		pe.e.Close()
	}
}

// Targets returns the targets with an engine, sorted.
func (p *Pool) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	targets := slices.Sorted(maps.Keys(p.engines))
	if targets == nil {
		targets = []string{}
	}
	return targets
}

// Dump returns one CSDS ClientConfig per target, sorted by target, each
// with its target as client_scope (gRFC A71's CSDS change).
func (p *Pool) Dump() []*statuspb.ClientConfig {
	p.mu.Lock()
	engines := make([]*Engine, 0, len(p.engines))
	for _, t := range slices.Sorted(maps.Keys(p.engines)) {
		engines = append(engines, p.engines[t].e)
	}
	p.mu.Unlock()
	out := make([]*statuspb.ClientConfig, 0, len(engines))
	for _, e := range engines {
		out = append(out, e.Dump())
	}
	return out
}

// Close closes every engine of the pool, whoever still uses it, and
// returns their errors joined; later Gets fail and releases do nothing.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	engines := p.engines
	p.engines = nil
	p.mu.Unlock()
	var errs []error
	for _, pe := range engines {
		errs = append(errs, pe.e.Close())
	}
	return errors.Join(errs...)
}
