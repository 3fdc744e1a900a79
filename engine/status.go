package engine

import (
	"maps"
	"slices"
	"strings"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// ResourceStatus returns the CSDS state (gRFC A40) of one watched
// resource, as [Engine.Dump] shows it, without building the whole dump;
// nil if the resource is not watched. An xdstp:// name may be given in
// any form that canonicalizes to the watched one.
func (e *Engine) ResourceStatus(typeURL, name string) *statuspb.ClientConfig_GenericXdsConfig {
	e.mu.Lock()
	_, en := e.lookupEntryLocked(typeURL, name)
	if en == nil || en.orphaned {
		e.mu.Unlock()
		return nil
	}
	snap := snapshotLocked(en)
	e.mu.Unlock()
	return snap.csds()
}

// AuthorityStatus is the state of one authority's servers (gRFC A47, A71).
type AuthorityStatus struct {
	// Name is the authority's name in the bootstrap. OldStyle marks the
	// authority of names that are not xdstp:// URIs, which uses the
	// bootstrap's top-level servers.
	Name     string
	OldStyle bool
	// Servers are the URIs of its servers, in the bootstrap's order of
	// priority.
	Servers []string
	// Active is the URI of the server the authority's resources come from
	// now: the first server, or a fallback (A71). "" when none is in use:
	// nothing under the authority is watched.
	Active string
	// Connected says that Active has sent a response since it last
	// failed.
	Connected bool
	// Err is Active's last failure while it persists: it is unreachable,
	// or its response was too large to read. nil when healthy.
	Err error
	// Versions are the version_info (State of the World) or
	// system_version_info (incremental) last accepted from Active, by
	// type URL. CSDS shows each resource's version; this is the
	// server's version of the whole type.
	Versions map[string]string
	// Delta says that Active speaks incremental xDS.
	Delta bool
}

// Authorities returns the state of every authority: which server each
// uses now, and whether it is reachable. The old-style authority comes
// first, then the others by name.
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
			s.Active, s.Connected, s.Delta = c.server.URI, c.connected, c.delta
			s.Versions = maps.Clone(c.versions)
			if c.status != nil {
				s.Err = c.status
			}
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out[1:], func(x, y AuthorityStatus) int { return strings.Compare(x.Name, y.Name) })
	return out
}
