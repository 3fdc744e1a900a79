package relay

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// group is one aggregation key: its engine, and its caches by type.
type group struct {
	r   *Relay
	key string
	eng *engine.Engine
	// watches counts the downstream watches of the key (guarded by r.mu).
	watches int

	mu    sync.Mutex
	types map[string]*typeCache

	// The upstream events waiting for the flusher.
	batchMu      sync.Mutex
	batch        map[*typeCache]map[string]event
	wildAnswered map[*typeCache]*upstreamWild
	dones        []func()
	kick         chan struct{}
	stop         chan struct{}
	flushed      chan struct{}

	reapMu   sync.Mutex
	reapAt   time.Time
	stopReap func() bool
	closing  bool

	// What the upstream watchers were told of NACKs (see noteUpstream).
	nackMu     sync.Mutex
	nacks      int
	lastNACK   error
	lastNACKAt time.Time
	// nacked is the NACK last counted of each resource, so that a NACK
	// told again (to a name's and the wildcard's watchers, or to a new
	// watcher) counts once; nackedLen is its length, read without the
	// lock by every new version.
	nacked    map[registry.Ref]*engine.Error
	nackedLen atomic.Int64
}

func (r *Relay) newGroup(key string) (*group, error) {
	cfg := r.engineConfig(key)
	g := &group{
		r:            r,
		key:          key,
		types:        map[string]*typeCache{},
		batch:        map[*typeCache]map[string]event{},
		wildAnswered: map[*typeCache]*upstreamWild{},
		kick:         make(chan struct{}, 1),
		stop:         make(chan struct{}),
		flushed:      make(chan struct{}),
		nacked:       map[registry.Ref]*engine.Error{},
	}
	if r.cfg.Store != nil {
		st, err := r.cfg.Store(key)
		if err != nil {
			return nil, fmt.Errorf("relay: the store of aggregation key %q: %w", key, err)
		}
		cfg.Store = st
	}
	e, err := engine.New(cfg)
	if err != nil {
		if cfg.Store != nil {
			cfg.Store.Close() // the engine closes the store it runs with
		}
		return nil, fmt.Errorf("relay: the engine of aggregation key %q: %w", key, err)
	}
	g.eng = e
	go g.flushLoop()
	return g, nil
}

// engineConfig is the configuration of key's engine.
func (r *Relay) engineConfig(key string) engine.Config {
	cfg := r.cfg.Upstream
	bs := *cfg.Bootstrap
	bs.Node = r.cfg.Aggregation.Node(key, bs.Node)
	cfg.Bootstrap = &bs
	cfg.Target = key
	return cfg
}

// typeCache returns the cache of typeURL, creating it on first use.
func (g *group) typeCache(typeURL string) *typeCache {
	g.mu.Lock()
	defer g.mu.Unlock()
	tc := g.types[typeURL]
	if tc == nil {
		_, known := g.eng.Registry().Lookup(typeURL)
		if !known {
			g.r.log.Info("relay: a client subscribed to a type the registry does not have; it gets no resources of it",
				"key", g.key, "type", typeURL)
		}
		tc = newTypeCache(g, typeURL, !known)
		g.types[typeURL] = tc
	}
	return tc
}

func (g *group) typeCaches() []*typeCache {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*typeCache, 0, len(g.types))
	for _, tc := range g.types {
		out = append(out, tc)
	}
	return out
}

// armReaper makes sure the reaper runs at or before at.
func (g *group) armReaper(at time.Time) {
	g.reapMu.Lock()
	defer g.reapMu.Unlock()
	if g.closing || (!g.reapAt.IsZero() && !at.Before(g.reapAt)) {
		return
	}
	if g.stopReap != nil {
		g.stopReap()
	}
	g.reapAt = at
	g.stopReap = g.r.cfg.Clock.AfterFunc(at.Sub(g.r.cfg.Clock.Now()), g.reap)
}

// reap ends what lingered long enough, and the group itself once it has
// nothing left.
func (g *group) reap() {
	if !g.r.enterTimer() {
		return
	}
	defer g.r.exitTimer()
	g.reapMu.Lock()
	g.reapAt, g.stopReap = time.Time{}, nil
	g.reapMu.Unlock()
	var next time.Time
	now := g.r.cfg.Clock.Now()
	for _, tc := range g.typeCaches() {
		if due := tc.reap(now); !due.IsZero() {
			next = earliest(next, due)
		}
	}
	if !next.IsZero() {
		g.armReaper(next)
		return
	}
	g.r.dropIfIdle(g)
}

// idle tells whether nothing is left of the group: no downstream watch,
// no upstream subscription.
func (g *group) idle() bool {
	for _, tc := range g.typeCaches() {
		tc.mu.Lock()
		idle := tc.idleLocked()
		tc.mu.Unlock()
		if !idle {
			return false
		}
	}
	return true
}

// close ends the group: its flusher, its timer, its engine and the
// engine's store.
func (g *group) close() error {
	g.reapMu.Lock()
	g.closing = true
	if g.stopReap != nil {
		g.stopReap()
	}
	g.reapMu.Unlock()
	close(g.stop)
	<-g.flushed
	return g.eng.Close() // and its store
}
