package engine

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/serial"
	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
)

// Version is the engine's version, sent as the node's user agent version.
const Version = "0.1.0"

// DefaultSlowWatcherThreshold is Config.SlowWatcherThreshold's default.
const DefaultSlowWatcherThreshold = 30 * time.Second

// Client features every engine advertises (gRFC A27, and the
// envoy.service.discovery.v3.Resource wrapper in SotW).
const (
	clientFeatureNoOverprovisioning = "envoy.lb.does_not_support_overprovisioning"
	clientFeatureResourceInSotW     = "xds.config.resource-in-sotw"
)

// Engine is an xDS client: it keeps one ADS stream per xDS server it
// needs, caches what the servers send and tells watchers (gRFC A27, A57,
// A71, A88, A95). It is safe for concurrent use.
type Engine struct {
	cfg        Config
	reg        *registry.Registry
	clock      Clock
	log        *slog.Logger
	switches   features.Switches
	backoff    func(int) time.Duration
	node       *corepb.Node
	nodeID     string
	known      []features.ServerFeature
	fallback   FallbackPolicy
	ser        *serial.Serializer
	hashSeed   maphash.Seed
	streamsRun sync.WaitGroup
	metrics    *metrics
	// applying is odd while a response is being applied, and counts the
	// starts and ends: the engine's lock is held then, so subscriptions
	// cannot change, and request batching must not mistake that for quiet.
	applying atomic.Uint64
	// maxResponseBytes and slowWatcherThreshold are the Config's, with
	// their defaults.
	maxResponseBytes     int
	slowWatcherThreshold time.Duration

	mu          sync.Mutex
	closed      bool
	oldStyle    *authority            // names that are not xdstp:// (A47)
	authorities map[string]*authority // xdstp:// authorities of the bootstrap
	channels    map[string]*channel   // by bootstrap.ServerConfig.key
	byContent   map[contentKey]*entry // cached resources by the hash of their bytes
}

// authority is one A47 authority: its ordered server list and the
// resources watched under it. Old-style names have an authority of their
// own, apart from the bootstrap's, which may include one named "".
type authority struct {
	name             string
	oldStyle         bool
	servers          []bootstrap.ServerConfig
	reachabilityOnly bool
	// channels are the servers in use, in priority order; the last one is
	// active. A71: a fallback is appended while the ones before it stay
	// subscribed, and the first response of a higher one truncates the
	// list after it.
	channels  []*channel
	resources map[string]map[string]*entry // type URL → name → entry
}

func (a *authority) active() *channel {
	if len(a.channels) == 0 {
		return nil
	}
	return a.channels[len(a.channels)-1]
}

func (a *authority) displayName() string {
	if a.oldStyle {
		return "#old"
	}
	return a.name
}

// New builds an engine. It connects to no server until the first Watch.
func New(cfg Config) (*Engine, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:         cfg,
		reg:         cfg.Registry,
		nodeID:      cfg.Bootstrap.Node.ID,
		hashSeed:    maphash.MakeSeed(),
		authorities: make(map[string]*authority),
		channels:    make(map[string]*channel),
		byContent:   make(map[contentKey]*entry),
	}
	e.applyDefaults()
	if err := checkServers(e.cfg.Transport, cfg.Bootstrap); err != nil {
		return nil, err
	}
	if e.switches.DisableDataErrorHandling {
		e.known = append(features.LegacyBuiltin(), cfg.Features...)
	} else {
		e.known = append(features.Builtin(), cfg.Features...)
	}
	e.node = e.buildNode()
	e.oldStyle = e.newAuthority("", cfg.Bootstrap.Servers, false)
	e.oldStyle.oldStyle = true
	for name, a := range cfg.Bootstrap.Authorities {
		servers := a.Servers
		if len(servers) == 0 {
			servers = cfg.Bootstrap.Servers
		}
		e.authorities[name] = e.newAuthority(name, servers, a.FallbackOnReachabilityOnly)
	}
	m, err := newMetrics(e, cfg.MeterProvider)
	if err != nil {
		return nil, fmt.Errorf("engine: metrics: %w", err)
	}
	e.metrics = m
	e.ser = serial.New()
	return e, nil
}

// checkConfig rejects a Config New cannot run with, naming the field.
func checkConfig(cfg Config) error {
	if cfg.Registry == nil || cfg.Registry.Len() == 0 {
		return errors.New("engine: Config.Registry must hold at least one resource type")
	}
	if cfg.Bootstrap == nil {
		return errors.New("engine: Config.Bootstrap is required")
	}
	if len(cfg.Bootstrap.Servers) == 0 {
		return errors.New("engine: Config.Bootstrap.Servers must list at least one xDS server")
	}
	for i, s := range cfg.Bootstrap.Servers {
		if s.URI == "" {
			return fmt.Errorf("engine: Config.Bootstrap.Servers[%d]: empty URI", i)
		}
	}
	if cfg.MaxResponseBytes < 0 {
		return fmt.Errorf("engine: Config.MaxResponseBytes: %d is negative", cfg.MaxResponseBytes)
	}
	for name, a := range cfg.Bootstrap.Authorities {
		for i, s := range a.Servers {
			if s.URI == "" {
				return fmt.Errorf("engine: Config.Bootstrap.Authorities[%q].Servers[%d]: empty URI", name, i)
			}
		}
	}
	return nil
}

// applyDefaults fills in what the Config left at its zero value.
func (e *Engine) applyDefaults() {
	cfg := e.cfg
	// Interfaces are compared with nil, not with cmp.Or: a Clock or
	// FallbackPolicy of a func type would make == panic.
	e.clock = cfg.Clock
	if e.clock == nil {
		e.clock = realClock{}
	}
	e.log = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	e.maxResponseBytes = cmp.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes)
	switch e.slowWatcherThreshold = cfg.SlowWatcherThreshold; {
	case e.slowWatcherThreshold == 0:
		e.slowWatcherThreshold = DefaultSlowWatcherThreshold
	case e.slowWatcherThreshold < 0:
		e.slowWatcherThreshold = 0
	}
	e.backoff = cfg.Backoff
	if e.backoff == nil {
		e.backoff = DefaultBackoff
	}
	if cfg.Switches != nil {
		e.switches = *cfg.Switches
	} else {
		e.switches = features.SwitchesFromEnv()
	}
	e.fallback = cfg.FallbackPolicy
	if e.fallback == nil {
		e.fallback = DefaultFallbackPolicy()
	}
	if cfg.Transport == nil {
		e.cfg.Transport = GRPCTransport()
	}
}

func (e *Engine) newAuthority(name string, servers []bootstrap.ServerConfig, reachabilityOnly bool) *authority {
	if e.switches.DisableFallback && len(servers) > 1 {
		servers = servers[:1]
	}
	return &authority{
		name:             name,
		servers:          servers,
		reachabilityOnly: reachabilityOnly && !e.switches.DisableEndpointFallback,
		resources:        make(map[string]map[string]*entry),
	}
}

func (e *Engine) buildNode() *corepb.Node {
	n := e.cfg.Bootstrap.Node
	node := &corepb.Node{
		Id:            n.ID,
		Cluster:       n.Cluster,
		Metadata:      n.Metadata,
		UserAgentName: e.cfg.UserAgentName,
		UserAgentVersionType: &corepb.Node_UserAgentVersion{
			UserAgentVersion: e.cfg.UserAgentVersion,
		},
	}
	if node.UserAgentName == "" {
		node.UserAgentName = "xdsengine"
	}
	if e.cfg.UserAgentVersion == "" {
		node.UserAgentVersionType = &corepb.Node_UserAgentVersion{UserAgentVersion: Version}
	}
	if n.Locality != (bootstrap.Locality{}) {
		node.Locality = &corepb.Locality{Region: n.Locality.Region, Zone: n.Locality.Zone, SubZone: n.Locality.SubZone}
	}
	cf := []string{clientFeatureNoOverprovisioning, clientFeatureResourceInSotW}
	for _, u := range e.reg.TypeURLs() {
		t, _ := e.reg.Lookup(u)
		if !t.EnabledUnder(e.switches) {
			continue
		}
		for _, f := range t.ClientFeatures {
			if !slices.Contains(cf, f) {
				cf = append(cf, f)
			}
		}
	}
	node.ClientFeatures = cf
	return node
}

// NodeID returns the node ID from the bootstrap.
func (e *Engine) NodeID() string { return e.nodeID }

// Registry returns the engine's resource types.
func (e *Engine) Registry() *registry.Registry { return e.reg }

// watch is one Watch call's registration.
type watch struct {
	w        ResourceWatcher
	entry    *entry
	canceled atomic.Bool
}

// Watch starts watching the resource of type typeURL called name and
// returns the function that stops it. The watcher's callbacks run on the
// engine's callback goroutine (see [ResourceWatcher]). An unknown type,
// an unparsable name or an authority missing from the bootstrap reach the
// watcher as an error at once, and no stream is opened for them. After
// Close, Watch does nothing.
func (e *Engine) Watch(typeURL, name string, w ResourceWatcher) (cancel func()) {
	if w == nil {
		panic("engine: Watch with a nil watcher")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return func() {}
	}
	typ, ok := e.lookupType(typeURL)
	if !ok {
		cause := fmt.Errorf("resource type %q is not registered", typeURL)
		if _, registered := e.reg.Lookup(typeURL); registered {
			cause = fmt.Errorf("resource type %q is switched off by the engine's switches (Config.Switches, or gRPC's GRPC_EXPERIMENTAL_XDS_* environment variables)", typeURL)
		}
		e.failWatchLocked(w, &Error{Kind: KindUnknownType, Code: codes.FailedPrecondition, TypeURL: typeURL, Name: name,
			NodeID: e.nodeID, Err: cause})
		return func() {}
	}
	a, key, werr := e.resolveName(typeURL, name)
	if werr != nil {
		e.failWatchLocked(w, werr)
		return func() {}
	}
	byName := a.resources[typeURL]
	if byName == nil {
		byName = make(map[string]*entry)
		a.resources[typeURL] = byName
	}
	en := byName[key]
	created := en == nil
	if created {
		en = &entry{typ: typ, name: key, auth: a, watchers: make(map[*watch]struct{})}
		byName[key] = en
	}
	wasOrphan := en.orphaned
	en.orphaned = false
	h := &watch{w: w, entry: en}
	en.watchers[h] = struct{}{}
	if created || wasOrphan {
		e.subscribeLocked(en, created)
	}
	e.deliverCurrentLocked(h)
	return func() { e.cancelWatch(h) }
}

// lookupType returns a registered type that is on under the engine's
// switches.
func (e *Engine) lookupType(typeURL string) (registry.ResourceType, bool) {
	t, ok := e.reg.Lookup(typeURL)
	if !ok || !t.EnabledUnder(e.switches) {
		return registry.ResourceType{}, false
	}
	return t, true
}

func (e *Engine) failWatchLocked(w ResourceWatcher, err *Error) {
	e.log.Warn("xDS watch rejected", "type", err.TypeURL, "name", err.Name, "error", err)
	u := Update{Err: err, Received: e.clock.Now()}
	e.ser.Schedule(func() { deliverChange(w, u, func() {}) })
}

// resolveName finds the authority of a resource name and its cache
// key: the name itself, or for xdstp:// names its canonical form (A47).
// It needs no lock: the authorities are fixed when the engine is built.
func (e *Engine) resolveName(typeURL, name string) (*authority, string, *Error) {
	if !utf8.ValidString(name) {
		// It could never be sent: a request's names are proto strings.
		return nil, "", &Error{Kind: KindInvalidName, Code: codes.InvalidArgument, TypeURL: typeURL, Name: strings.ToValidUTF8(name, "\uFFFD"),
			NodeID: e.nodeID, Err: errors.New("resource name is not valid UTF-8")}
	}
	if !strings.HasPrefix(name, "xdstp:") {
		return e.oldStyle, name, nil
	}
	n, err := xdsname.Parse(name)
	if err == nil {
		err = xdsname.CheckType(n, typeURL)
	}
	if err != nil {
		return nil, "", &Error{Kind: KindInvalidName, Code: codes.InvalidArgument, TypeURL: typeURL, Name: name,
			NodeID: e.nodeID, Err: fmt.Errorf("unable to parse resource name: %w", err)}
	}
	a, ok := e.authorities[n.Authority]
	if !ok {
		return nil, "", &Error{Kind: KindUnknownAuthority, Code: codes.FailedPrecondition, TypeURL: typeURL, Name: name,
			NodeID: e.nodeID, Err: fmt.Errorf("authority %q is not in the bootstrap", n.Authority)}
	}
	return a, n.String(), nil
}

// lookupEntryLocked finds the entry for a name received from a server.
func (e *Engine) lookupEntryLocked(typeURL, name string) (*authority, *entry) {
	a, key, err := e.resolveName(typeURL, name)
	if err != nil {
		return nil, nil
	}
	return a, a.resources[typeURL][key]
}

// subscribeLocked puts a new (or re-watched) entry on the wire on every
// channel of its authority, creating the primary channel if needed.
func (e *Engine) subscribeLocked(en *entry, isNew bool) {
	a := en.auth
	if len(a.channels) == 0 {
		c := e.channelLocked(a.servers[0])
		c.auths[a] = struct{}{}
		a.channels = append(a.channels, c)
	}
	for _, c := range a.channels {
		c.typeChangedLocked(en.typ.TypeURL)
	}
	// A71: watching a new, uncached resource while the active server is
	// failing is itself a reason to try the next server.
	if isNew {
		if act := a.active(); act.status != nil {
			e.maybeFallbackLocked(a)
		}
	}
}

// deliverCurrentLocked tells a new watcher what the others already know:
// the cached resource, then the ambient error (A88), or the error that
// explains why there is no resource.
func (e *Engine) deliverCurrentLocked(h *watch) {
	en := h.entry
	switch {
	case en.value != nil:
		u := e.updateLocked(en, en.value, nil)
		e.deliverLocked(h, nil, func(done func()) { deliverChange(h.w, u, done) })
		if amb := en.ambient; amb != nil {
			e.deliverLocked(h, nil, func(done func()) { h.w.OnAmbientError(amb, done) })
		}
	case en.err != nil:
		u := e.updateLocked(en, nil, en.err)
		e.deliverLocked(h, nil, func(done func()) { deliverChange(h.w, u, done) })
	default:
		if act := en.auth.active(); act != nil && act.status != nil {
			u := e.updateLocked(en, nil, e.channelErrorFor(act, en))
			e.deliverLocked(h, nil, func(done func()) { deliverChange(h.w, u, done) })
		}
	}
}

func (e *Engine) cancelWatch(h *watch) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !h.canceled.CompareAndSwap(false, true) || e.closed {
		return
	}
	en := h.entry
	delete(en.watchers, h)
	if len(en.watchers) > 0 {
		return
	}
	// The entry stays, orphaned, until a request without it is written,
	// so that a cancel followed by a new watch before then keeps the
	// cached resource (the server would not send it again).
	en.orphaned = true
	live := false
	for _, c := range en.auth.channels {
		if c.stream != nil && c.stream.StartedLocked() {
			live = true
		}
		c.typeChangedLocked(en.typ.TypeURL)
	}
	if !live {
		e.removeEntryLocked(en)
	}
}

// removeEntryLocked deletes an orphaned entry; an authority left with no
// entries releases its channels.
func (e *Engine) removeEntryLocked(en *entry) {
	a := en.auth
	byName := a.resources[en.typ.TypeURL]
	if byName[en.name] != en {
		return
	}
	delete(byName, en.name)
	if len(byName) == 0 {
		delete(a.resources, en.typ.TypeURL)
	}
	e.setRawLocked(en, nil, "")
	if len(a.resources) == 0 {
		chans := a.channels
		a.channels = nil
		for _, c := range chans {
			c.releaseLocked(a)
		}
	}
}

// Close stops every stream and the callback goroutine. No callback starts
// after Close returns, and no goroutine of the engine is left, in any
// phase: connecting, in backoff, while a response is applied, with a
// watcher's done outstanding. Close may be called from a watcher callback
// (or a Pool's release there); it then returns without waiting for that
// callback, and the callback goroutine ends as soon as it returns.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var transports []Transport
	for _, c := range e.channels {
		if t := c.shutdownLocked(); t != nil {
			transports = append(transports, t)
		}
	}
	e.channels = nil
	e.mu.Unlock()
	var errs []error
	for _, t := range transports {
		if err := t.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	e.streamsRun.Wait()
	e.ser.Close()
	e.metrics.close()
	return errors.Join(errs...)
}

// deliverLocked schedules one callback for a watcher. A non-nil gate holds
// the stream's next read until the callback calls done.
func (e *Engine) deliverLocked(h *watch, gate *wire.Gate, call func(done func())) {
	done := func() {}
	if gate != nil {
		done = gate.Add(wire.Pending{TypeURL: h.entry.typ.TypeURL, Name: h.entry.name})
	}
	if !e.ser.Schedule(func() {
		if h.canceled.Load() {
			done()
			return
		}
		call(done)
	}) {
		done()
	}
}

func (e *Engine) notifyChangedLocked(en *entry, r registry.Resource, err error, gate *wire.Gate) {
	if len(en.watchers) == 0 {
		return
	}
	u := e.updateLocked(en, r, err)
	for h := range en.watchers {
		e.deliverLocked(h, gate, func(done func()) { deliverChange(h.w, u, done) })
	}
}

func (e *Engine) notifyAmbientLocked(en *entry, err error, gate *wire.Gate) {
	for h := range en.watchers {
		e.deliverLocked(h, gate, func(done func()) { h.w.OnAmbientError(err, done) })
	}
}

func (e *Engine) allAuthoritiesLocked() []*authority {
	out := make([]*authority, 0, len(e.authorities)+1)
	out = append(out, e.oldStyle)
	for _, a := range e.authorities {
		out = append(out, a)
	}
	return out
}
