package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
)

// Relay serves downstream xDS clients what engines receive upstream. It
// implements go-control-plane's cache.Cache (ConfigWatcher and
// ConfigFetcher), so that server.NewServer serves it over ADS, State of
// the World and incremental. It is safe for concurrent use.
type Relay struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	// prefix begins every version this relay sends, so that a version
	// from another relay, or from this one before a restart, is told
	// apart.
	prefix string

	mu     sync.Mutex
	closed bool
	groups map[string]*group
	// timers counts the linger timers running, which Close waits for.
	timers sync.WaitGroup
}

var _ cache.Cache = (*Relay)(nil)

// New returns a relay. It checks the upstream configuration by building
// an engine of it, but connects to nothing until a client subscribes.
func New(cfg Config) (*Relay, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	probe, err := engine.New(cfg.Upstream)
	if err != nil {
		return nil, err
	}
	probe.Close()
	var id [4]byte
	rand.Read(id[:])
	r := &Relay{
		cfg:    cfg,
		log:    cfg.Logger,
		prefix: hex.EncodeToString(id[:]) + "-",
		groups: map[string]*group{},
	}
	if r.metrics, err = newMetrics(cfg.MeterProvider, r); err != nil {
		return nil, err
	}
	return r, nil
}

// errClosed is what a client gets from a closed relay.
var errClosed = status.Error(codes.Unavailable, "xDS relay closed")

// Close stops every engine. A server still using the relay gets
// UNAVAILABLE for new watches; stop it first.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	groups := r.groups
	r.groups = nil
	r.mu.Unlock()
	r.timers.Wait()
	var errs []error
	for _, g := range groups {
		errs = append(errs, g.close())
	}
	r.metrics.close()
	return errors.Join(errs...)
}

// CreateWatch implements cache.ConfigWatcher for State of the World
// streams.
func (r *Relay) CreateWatch(req *cache.Request, sub cache.Subscription, ch chan cache.Response) (func(), error) {
	w := &downWatch{sotw: req, ch: ch, sub: sub}
	if req.GetErrorDetail() != nil {
		r.nacked(req.GetNode(), req.GetTypeUrl(), req.GetResponseNonce(), req.GetErrorDetail().GetMessage())
		if r.foreignVersion(req.GetVersionInfo()) || req.GetVersionInfo() == "" {
			// The serving cache, as go-control-plane's LinearCache,
			// answers a request of no (or another) version at once,
			// with what it has: the very version the client rejected,
			// again and again (envoyproxy/go-control-plane#962). The
			// client keeps what it has; only a change is sent.
			w.sotw = withVersion(req, r.prefix)
		}
	}
	return r.open(w, req.GetNode(), req.GetTypeUrl())
}

// CreateDeltaWatch implements cache.ConfigWatcher for incremental
// streams.
func (r *Relay) CreateDeltaWatch(req *cache.DeltaRequest, sub cache.Subscription, ch chan cache.DeltaResponse) (func(), error) {
	if req.GetErrorDetail() != nil {
		// The serving cache compares with what the stream was sent,
		// the rejected versions included: nothing is sent again until
		// the resources change.
		r.nacked(req.GetNode(), req.GetTypeUrl(), req.GetResponseNonce(), req.GetErrorDetail().GetMessage())
	}
	return r.open(&downWatch{delta: req, dch: ch, sub: sub}, req.GetNode(), req.GetTypeUrl())
}

// Fetch implements cache.ConfigFetcher, for REST clients: it subscribes
// upstream as a stream would, waits for an answer as long as ctx allows,
// and keeps the subscription for the linger, for the client's next poll.
// A request of the current version gets types.SkipFetchError.
func (r *Relay) Fetch(ctx context.Context, req *cache.Request) (cache.Response, error) {
	ch := make(chan cache.Response, 1)
	sub := stream.NewSotwSubscription(req.GetResourceNames(), true)
	cancel, err := r.CreateWatch(req, sub, ch)
	if err != nil {
		return nil, err
	}
	defer cancel()
	select {
	case resp := <-ch:
		if resp.GetResponseVersion() == req.GetVersionInfo() {
			return nil, &types.SkipFetchError{}
		}
		return resp, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

func (r *Relay) open(w *downWatch, node *corepb.Node, typeURL string) (func(), error) {
	key, err := r.cfg.Aggregation.Key(node)
	if err != nil {
		return nil, err
	}
	g, err := r.acquireGroup(key)
	if err != nil {
		return nil, err
	}
	w.tc = g.typeCache(typeURL)
	w.tc.open(w)
	return w.end, nil
}

// acquireGroup returns key's group, creating it on first use, with one
// more watch counted.
func (r *Relay) acquireGroup(key string) (*group, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errClosed
	}
	g := r.groups[key]
	if g == nil {
		var err error
		if g, err = r.newGroup(key); err != nil {
			r.log.Error("relay: cannot serve an aggregation key", "key", key, "error", err)
			return nil, status.Error(codes.Unavailable, err.Error())
		}
		r.groups[key] = g
	}
	g.watches++
	return g, nil
}

func (r *Relay) releaseGroup(g *group) {
	r.mu.Lock()
	g.watches--
	last := g.watches == 0 && !r.closed
	r.mu.Unlock()
	if last {
		// Subscriptions arm the reaper themselves; a group that had none
		// still ends after the linger.
		g.armReaper(r.cfg.Clock.Now().Add(r.cfg.Linger))
	}
}

// dropIfIdle ends g if nothing is left of it.
func (r *Relay) dropIfIdle(g *group) {
	r.mu.Lock()
	if r.closed || r.groups[g.key] != g || g.watches > 0 || !g.idle() {
		r.mu.Unlock()
		return
	}
	delete(r.groups, g.key)
	r.mu.Unlock()
	r.log.Debug("relay: aggregation key idle, its engine closed", "key", g.key)
	if err := g.close(); err != nil {
		r.log.Warn("relay: closing an idle key's engine", "key", g.key, "error", err)
	}
}

// enterTimer registers a running linger timer; false once the relay is
// closed.
func (r *Relay) enterTimer() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.timers.Add(1)
	return true
}

func (r *Relay) exitTimer() { r.timers.Done() }

// foreignVersion tells whether a client's version_info comes from another
// relay, or from this one before it restarted.
func (r *Relay) foreignVersion(v string) bool {
	return v != "" && !strings.HasPrefix(v, r.prefix)
}

// nacked counts and logs a downstream NACK. It goes no further: the
// upstream has nothing to do with one client rejecting what others
// accept.
func (r *Relay) nacked(node *corepb.Node, typeURL, nonce, detail string) {
	key, _ := r.cfg.Aggregation.Key(node)
	r.metrics.nack(key, typeURL)
	r.log.Warn("relay: a client rejected a response; it is sent nothing more of the type until the resources change",
		"key", key, "node", node.GetId(), "type", typeURL, "nonce", nonce, "error", detail)
}

// withVersion is req with another version_info; the server keeps req,
// so it is not modified.
func withVersion(req *cache.Request, version string) *cache.Request {
	return &discoverypb.DiscoveryRequest{
		VersionInfo:   version,
		Node:          req.GetNode(),
		ResourceNames: req.GetResourceNames(),
		TypeUrl:       req.GetTypeUrl(),
		ResponseNonce: req.GetResponseNonce(),
		ErrorDetail:   req.GetErrorDetail(),
	}
}
