package relay

import (
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// event is what an upstream watcher reports of one resource: a new
// version, or that the upstream says it does not exist (gone).
type event struct {
	res  registry.Resource
	gone bool
}

// nameWatcher watches one resource upstream for a typeCache. It only
// queues what it hears for the group's flusher, which applies a whole
// response's worth at once.
type nameWatcher struct {
	tc   *typeCache
	name string
}

func (w *nameWatcher) OnResourceChanged(r registry.Resource, err error, done func()) {
	w.tc.g.noteUpstream(w.tc, w.name, err)
	switch {
	case err == nil:
		w.tc.g.post(w.tc, w.name, event{res: r}, done)
	case upstreamSaysAbsent(err):
		w.tc.g.post(w.tc, w.name, event{gone: true}, done)
	default:
		// Transient, and the resource is not cached (the engine reports
		// a transient error on a cached one as ambient): nothing to
		// serve, and nothing resolved. Status and metrics tell of it.
		done()
	}
}

func (w *nameWatcher) OnAmbientError(err error, done func()) {
	w.tc.g.noteUpstream(w.tc, w.name, err)
	if deletedUpstream(err) {
		w.tc.g.post(w.tc, w.name, event{gone: true}, done)
		return
	}
	// A failure: keep serving the last good version.
	done()
}

// upstreamSaysAbsent tells whether an error a watcher gets with
// OnResourceChanged resolves the resource as not existing: a data error
// (deleted, does not exist, rejected, or so reported by the server), or a
// name that cannot be watched at all. Transient errors (unreachable
// server, a timer of a server whose timeouts are transient, a response
// too large to read, a closed engine) resolve nothing.
func upstreamSaysAbsent(err error) bool {
	var e *engine.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case engine.KindConnectivity, engine.KindTimeout, engine.KindResponseTooLarge, engine.KindClosed:
		return false
	case engine.KindServerReported:
		return e.Code == codes.NotFound || e.Code == codes.PermissionDenied
	}
	return true
}

// deletedUpstream tells whether an ambient error means that the upstream
// deleted a resource the engine keeps (gRFC A88 keeps a deleted LDS or
// CDS resource, and one a server reports NOT_FOUND or PERMISSION_DENIED,
// unless fail_on_data_errors). The relay passes deletions on: each
// downstream client applies its own policy to them, as it would with the
// upstream server itself. A rejected update (NACK) is a failure, not a
// deletion: the last good version stays.
func deletedUpstream(err error) bool {
	var e *engine.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case engine.KindDeleted:
		return true
	case engine.KindServerReported:
		return e.Code == codes.NotFound || e.Code == codes.PermissionDenied
	}
	return false
}

// noteUpstream keeps the count of upstream NACKs (KeyStatus.UpstreamNACKs)
// from what a watcher was told of name: err, or nil for a new version. A
// NACK is counted once however many watchers are told of it; a new
// version, or the upstream's word that the resource is gone, ends it, so
// that the next NACK of the resource counts again. The rest (transient
// failures) leaves the count as it is.
func (g *group) noteUpstream(tc *typeCache, name string, err error) {
	if err == nil || engine.KindOf(err) != engine.KindNACK {
		if err == nil || deletedUpstream(err) || upstreamSaysAbsent(err) {
			g.forgetNACKs(tc.typeURL, name)
		}
		return
	}
	var e *engine.Error
	errors.As(err, &e)
	ref := registry.Ref{TypeURL: tc.typeURL, Name: name}
	g.nackMu.Lock()
	if g.nacked[ref] == e {
		g.nackMu.Unlock()
		return
	}
	if _, ok := g.nacked[ref]; !ok {
		g.nackedLen.Add(1)
	}
	g.nacked[ref] = e
	g.nacks++
	g.lastNACK, g.lastNACKAt = e, g.r.cfg.Clock.Now()
	g.nackMu.Unlock()
	g.r.metrics.upstreamNACK(g.key, tc.typeURL)
}

// forgetNACKs forgets the NACKs of names: the upstream said more of them
// since, or their subscriptions ended.
func (g *group) forgetNACKs(typeURL string, names ...string) {
	if g.nackedLen.Load() == 0 {
		return // the common case, every new version: no lock
	}
	g.nackMu.Lock()
	defer g.nackMu.Unlock()
	for _, name := range names {
		ref := registry.Ref{TypeURL: typeURL, Name: name}
		if _, ok := g.nacked[ref]; ok {
			delete(g.nacked, ref)
			g.nackedLen.Add(-1)
		}
	}
}

// post queues an upstream event for the flusher. The engine's done is
// called once the event is applied, so the engine reads its server's
// next response only after the relay caught up with the last one.
func (g *group) post(tc *typeCache, name string, ev event, done func()) {
	g.batchMu.Lock()
	byName := g.batch[tc]
	if byName == nil {
		byName = map[string]event{}
		g.batch[tc] = byName
	}
	byName[name] = ev
	g.dones = append(g.dones, done)
	g.batchMu.Unlock()
	g.kickFlusher()
}

func (g *group) kickFlusher() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// flushLoop applies the queued upstream events. The engine notifies
// watchers one resource at a time; applying them in batches, as many as
// arrived while the last batch was applied, keeps a response of
// thousands of resources from waking every downstream watch thousands of
// times.
func (g *group) flushLoop() {
	defer close(g.flushed)
	for {
		select {
		case <-g.kick:
		case <-g.stop:
			return
		}
		g.batchMu.Lock()
		batch, answered, dones := g.batch, g.wildAnswered, g.dones
		g.batch, g.wildAnswered, g.dones = map[*typeCache]map[string]event{}, map[*typeCache]*upstreamWild{}, nil
		g.batchMu.Unlock()
		for tc, byName := range batch {
			tc.apply(g.encode(tc, byName), answered[tc])
			delete(answered, tc)
		}
		for tc, w := range answered {
			tc.apply(nil, w)
		}
		for _, done := range dones {
			done()
		}
	}
}

// encode turns upstream events into changes of what is served, outside
// every lock. A resource the encoder refuses is served as gone: the
// relay cannot serve it, and says so in its logs and metrics.
func (g *group) encode(tc *typeCache, byName map[string]event) map[string]change {
	changes := make(map[string]change, len(byName))
	for name, ev := range byName {
		if ev.gone {
			changes[name] = change{gone: true}
			continue
		}
		b, err := g.r.cfg.Encoder.Encode(tc.typeURL, ev.res)
		if err != nil {
			g.r.log.Error("relay: cannot serve a resource", "key", g.key, "type", tc.typeURL, "name", name, "error", err)
			g.r.metrics.unservable(g.key, tc.typeURL)
			changes[name] = change{gone: true}
			continue
		}
		changes[name] = change{bytes: b}
	}
	return changes
}
