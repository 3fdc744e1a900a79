package relay

import (
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/engine/storage"
)

// DefaultLinger is how long an upstream subscription stays after the last
// downstream client of it left, when Config.Linger is zero: long enough
// for a client that reconnects, or a relay behind a load balancer that
// moves clients around, to find its configuration still cached.
const DefaultLinger = 30 * time.Second

// Config configures a Relay. The relay does not modify it.
type Config struct {
	// Upstream configures the engines the relay watches its servers
	// with, one per aggregation key: bootstrap (servers, node,
	// authorities), registry, transport, features and so on. Each
	// engine gets a copy with Target set to its key and the bootstrap's
	// node replaced by the one Aggregation.Node returns. Required: a
	// bootstrap with a server, and a registry. The registry decides which
	// types are relayed and how strictly they are validated (see the
	// package doc, # Validation): the built-in types validate as gRPC
	// does (for gRPC clients); the pass-through types relay what any
	// client can read, Envoy's and gRPC's.
	Upstream engine.Config
	// Aggregation decides which downstream clients share a configuration
	// and what node each key's engine presents upstream. Nil means
	// [ByCluster].
	Aggregation Aggregation
	// Linger is how long an upstream subscription stays after the last
	// downstream watch of it ended. Zero means [DefaultLinger]; it must
	// not be negative.
	Linger time.Duration
	// Encoder gives the bytes served for a decoded resource. Nil means
	// [DefaultEncoder].
	Encoder Encoder
	// Store, when set, gives each key's engine its last-known-good store
	// (engine.Config.Store), so that a relay restarted while its servers
	// are unreachable serves what it last accepted ([StoreDir] keeps them
	// in files). A store must be one key's only: the engine keeps one
	// node's configuration in it, and closes it when the key's engine
	// closes (the key idle for the linger, or the relay closed); the key
	// asks for it again if it comes back.
	Store func(key string) (storage.Store, error)
	// Logger receives the relay's logs, and the engines' when
	// Upstream.Logger is nil. Nil discards them.
	Logger *slog.Logger
	// MeterProvider receives the relay's metrics, and the engines' when
	// Upstream.MeterProvider is nil. Nil records nothing.
	MeterProvider metric.MeterProvider
	// Clock runs the linger timers. Nil means the wall clock; the
	// engines use Upstream.Clock.
	Clock engine.Clock
}

func (c *Config) check() error {
	if c.Upstream.Bootstrap == nil {
		return errors.New("relay: Config.Upstream.Bootstrap is required")
	}
	if c.Upstream.Registry == nil {
		return errors.New("relay: Config.Upstream.Registry is required")
	}
	if c.Upstream.Store != nil {
		return errors.New("relay: Config.Upstream.Store is one engine's, and the relay has one per key: set Config.Store")
	}
	if c.Linger < 0 {
		return errors.New("relay: Config.Linger must not be negative")
	}
	return nil
}

func (c *Config) applyDefaults() {
	if c.Aggregation == nil {
		c.Aggregation = ByCluster()
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.Encoder == nil {
		c.Encoder = DefaultEncoder()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = engine.RealClock()
	}
	if c.Upstream.Logger == nil {
		c.Upstream.Logger = c.Logger
	}
	if c.Upstream.MeterProvider == nil {
		c.Upstream.MeterProvider = c.MeterProvider
	}
}
