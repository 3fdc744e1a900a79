package relay

import (
	"slices"
	"strings"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// KeyStatus is the state of one aggregation key.
type KeyStatus struct {
	Key string
	// NodeID is the node ID the key's engine presents upstream.
	NodeID string
	// Connected says that the key's engine uses a server, and that every
	// server it uses has answered since it last failed.
	Connected bool
	// Err is the failure of a server the key uses, while it persists.
	// The key's clients are served the last good configuration meanwhile.
	Err error
	// Watches counts the downstream watches of the key; Held those of
	// them waiting for the upstream to resolve what their answer speaks
	// for (see the package doc, # Rules).
	Watches, Held int
	// Subscriptions counts the upstream subscriptions (a wildcard counts
	// one), lingering ones included.
	Subscriptions int
	// Resources counts the resources served, all types together.
	Resources int
	// UpstreamNACKs counts the resources of upstream responses that the
	// key's engine rejected (NACKed: its registry's validation failed),
	// each rejection once; LastNACK is the last of them, an error of the
	// engine (engine.KindNACK, status code INVALID_ARGUMENT) that names
	// the resource and says why, and LastNACKAt when the relay heard of
	// it (Config.Clock). A rejection is no outage: the upstream answers
	// (Connected, no Err), and the key's clients keep the last good
	// version of the resource, or go without one they never had.
	UpstreamNACKs int
	LastNACK      error
	LastNACKAt    time.Time
}

// Status returns the state of every aggregation key with an engine,
// sorted by key.
func (r *Relay) Status() []KeyStatus {
	var out []KeyStatus
	for _, g := range r.liveGroups() {
		s := KeyStatus{Key: g.key, NodeID: g.eng.NodeID()}
		active := 0
		s.Connected = true
		for _, a := range g.eng.Authorities() {
			if a.Active == "" {
				continue
			}
			active++
			s.Connected = s.Connected && a.Connected
			if s.Err == nil {
				s.Err = a.Err
			}
		}
		s.Connected = s.Connected && active > 0
		for _, tc := range g.typeCaches() {
			tc.mu.Lock()
			s.Watches += tc.watches
			s.Held += len(tc.held)
			s.Subscriptions += len(tc.names)
			if tc.wild != nil {
				s.Subscriptions++
			}
			s.Resources += len(tc.served)
			tc.mu.Unlock()
		}
		g.nackMu.Lock()
		s.UpstreamNACKs, s.LastNACK, s.LastNACKAt = g.nacks, g.lastNACK, g.lastNACKAt
		g.nackMu.Unlock()
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b KeyStatus) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// ClientConfigs returns the CSDS view of every key's engine (gRFC A40),
// sorted by key, which is each one's client_scope: a Relay is a
// csds.Source.
func (r *Relay) ClientConfigs() []*statuspb.ClientConfig {
	var out []*statuspb.ClientConfig
	for _, g := range r.liveGroups() {
		out = append(out, g.eng.Dump())
	}
	slices.SortFunc(out, func(a, b *statuspb.ClientConfig) int { return strings.Compare(a.GetClientScope(), b.GetClientScope()) })
	return out
}

func (r *Relay) liveGroups() []*group {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*group, 0, len(r.groups))
	for _, g := range r.groups {
		out = append(out, g)
	}
	return out
}
