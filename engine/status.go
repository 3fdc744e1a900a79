package engine

import (
	"maps"
	"slices"
	"strings"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/xdsengine/xdsengine/registry"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// ResourceStatus returns one watched resource's CSDS state (gRFC A40) as
// [Engine.Dump] shows it, without building the whole dump; nil if it is
// not watched. An xdstp:// name may be in any form that canonicalizes to
// the watched one.
func (e *Engine) ResourceStatus(typeURL, name string) *statuspb.ClientConfig_GenericXdsConfig {
	e.mu.Lock()
	_, en := e.lookupEntryLocked(typeURL, name)
	if en == nil || en.orphaned {
		e.mu.Unlock()
		return nil
	}
	snap := snapshotLocked(en) // the rest without the lock
	e.mu.Unlock()
	return snap.config()
}

// AuthorityStatus is the state of one authority's servers (gRFC A47, A71).
type AuthorityStatus struct {
	// Name is the authority's name in the bootstrap. OldStyle marks the
	// authority of names that are not xdstp:// URIs, which uses the
	// bootstrap's top-level servers.
	Name     string
	OldStyle bool
	// Servers are its servers' URIs, by priority.
	Servers []string
	// Active is the URI of the server its resources come from now: the
	// first, or a fallback (A71); "" when nothing under it is watched.
	Active string
	// Connected: Active is healthy: it has sent a response since it last
	// failed, or, having answered before, its stream has stayed open with
	// nothing new to send (see Config.QuietWindow).
	Connected bool
	// Err is Active's last failure while it persists (unreachable, or a
	// response too large to read); nil when healthy.
	Err error
	// Versions are, by type URL, the version_info (State of the World) or
	// system_version_info (incremental) last accepted from Active: the
	// server's version of the whole type, where CSDS shows each
	// resource's.
	Versions map[string]string
	// Delta says that Active speaks incremental xDS.
	Delta bool
	// FromStore counts the watched resources served from the
	// last-known-good store (Config.Store): no server has answered, or
	// one has and has yet to send them (see Store).
	FromStore int
}

// Authorities returns each authority's state: which server it uses now,
// and whether that is reachable. The old-style authority comes first,
// then the others by name.
func (e *Engine) Authorities() []AuthorityStatus {
	e.mu.Lock()
	defer e.mu.Unlock()
	auths := e.allAuthoritiesLocked()
	out := make([]AuthorityStatus, 0, len(auths))
	for _, a := range auths {
		s := AuthorityStatus{Name: a.name, OldStyle: a.oldStyle}
		for _, sc := range a.servers {
			s.Servers = append(s.Servers, sc.URI)
		}
		if c := a.active(); c != nil {
			s.Active, s.Connected, s.Delta = c.server.URI, c.connected, c.info.Delta
			s.Versions = maps.Clone(c.versions)
			if c.status != nil {
				s.Err = c.status // not a nil *Error in a non-nil error
			}
		}
		for en := range a.entries() {
			if en.storedOrigin() != nil {
				s.FromStore++
			}
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out[1:], func(x, y AuthorityStatus) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// Dump returns the engine's cache as a CSDS ClientConfig (gRFC A40): each
// watched resource's A88 cache state, cached version and resource, and
// last error; client_scope is Config.Target. The result is the caller's.
// Only copying the entries' immutable fields holds the lock, so a dump of
// 100,000 resources does not stall the streams.
func (e *Engine) Dump() *statuspb.ClientConfig {
	e.mu.Lock()
	auths, count := e.allAuthoritiesLocked(), 0
	for _, a := range auths {
		for _, byName := range a.resources {
			count += len(byName)
		}
	}
	snaps := make([]entrySnapshot, 0, count)
	for _, a := range auths {
		for en := range a.entries() {
			if !en.orphaned {
				snaps = append(snaps, snapshotLocked(en))
			}
		}
	}
	e.mu.Unlock()
	return clientConfig(e.node, e.cfg.Target, snaps)
}

func snapshotLocked(en *entry) entrySnapshot {
	s := entrySnapshot{TypeURL: en.typ.TypeURL, Name: en.name, Status: en.state.ClientStatus(), Cached: en.value != nil,
		Version: en.version, Raw: en.raw, Updated: en.updated()}
	if f := en.notes; f != nil && f.err != nil {
		s.Err, s.FailedVersion, s.FailedAt = f.err, f.failedVersion, f.failedAt
	} else if en.storedOrigin() != nil && f.ambient != nil {
		// CSDS has no word for a stored resource: its error state says so, and since when.
		s.Err, s.FailedAt = f.ambient, f.servedSince
	}
	return s
}

// gauges reads the gauges' values: which servers are connected, and the
// watched resources by authority, type and cache state.
func (e *Engine) gauges() (gaugeValues, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return gaugeValues{}, false
	}
	g := gaugeValues{Connected: map[string]bool{}, Resources: map[gaugeKey]int64{}}
	for _, c := range e.channels {
		g.Connected[c.server.URI] = g.Connected[c.server.URI] || c.connected
	}
	for _, a := range e.allAuthoritiesLocked() {
		for en := range a.entries() {
			if !en.orphaned {
				g.Resources[gaugeKey{Authority: a.displayName(), Type: registry.TypeName(en.typ.TypeURL),
					State: en.state.MetricLabel(en.value != nil)}]++
			}
		}
	}
	return g, true
}

// The CSDS view (gRFC A40) is built from snapshots of the entries, once
// the engine's lock is released: a dump of 100,000 resources does not
// stall the streams.

// entrySnapshot is what the engine copies of a cache entry under its lock: all
// immutable values (cached bytes and errors are replaced, never
// modified).
type entrySnapshot struct {
	TypeURL, Name string
	Status        adminpb.ClientResourceStatus
	Cached        bool
	Version       string
	Raw           []byte
	Updated       time.Time
	// Err is the entry's last error, with the failed update's version and
	// time; nil when it has none.
	Err           error
	FailedVersion string
	FailedAt      time.Time
}

// config returns the entry as CSDS shows it.
func (s *entrySnapshot) config() *statuspb.ClientConfig_GenericXdsConfig {
	g := &statuspb.ClientConfig_GenericXdsConfig{TypeUrl: s.TypeURL, Name: s.Name, ClientStatus: s.Status}
	if s.Cached {
		g.VersionInfo = s.Version
		g.XdsConfig = &anypb.Any{TypeUrl: s.TypeURL, Value: s.Raw}
		g.LastUpdated = timestamppb.New(s.Updated)
	}
	if s.Err != nil {
		fs := &adminpb.UpdateFailureState{Details: s.Err.Error(), VersionInfo: s.FailedVersion}
		if !s.FailedAt.IsZero() {
			fs.LastUpdateAttempt = timestamppb.New(s.FailedAt)
		}
		g.ErrorState = fs
	}
	return g
}

// clientConfig returns the entries, sorted by type URL and name, as the
// ClientConfig of a client with node (copied) and scope.
func clientConfig(node *corepb.Node, scope string, entries []entrySnapshot) *statuspb.ClientConfig {
	slices.SortFunc(entries, func(x, y entrySnapshot) int {
		if c := strings.Compare(x.TypeURL, y.TypeURL); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	cc := &statuspb.ClientConfig{Node: proto.Clone(node).(*corepb.Node), ClientScope: scope,
		GenericXdsConfigs: make([]*statuspb.ClientConfig_GenericXdsConfig, len(entries))}
	for i := range entries {
		cc.GenericXdsConfigs[i] = entries[i].config()
	}
	return cc
}
