package engine

import (
	"slices"
	"strings"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Dump returns the engine's cache as a CSDS ClientConfig (gRFC A40): one
// entry per watched resource, with the A88 cache state, the cached
// version and resource, and the last error. client_scope is
// Config.Target. The result is the caller's.
//
// The lock is held only to copy each entry's fields, which are immutable
// values (the cached bytes and errors are replaced, never modified), so a
// dump of 100,000 resources does not stall the streams.
func (e *Engine) Dump() *statuspb.ClientConfig {
	e.mu.Lock()
	node := e.node
	count := 0
	for _, a := range e.allAuthoritiesLocked() {
		for _, byName := range a.resources {
			count += len(byName)
		}
	}
	snaps := make([]entrySnapshot, 0, count)
	for _, a := range e.allAuthoritiesLocked() {
		for _, byName := range a.resources {
			for _, en := range byName {
				if !en.orphaned {
					snaps = append(snaps, snapshotLocked(en))
				}
			}
		}
	}
	e.mu.Unlock()

	slices.SortFunc(snaps, func(x, y entrySnapshot) int {
		if c := strings.Compare(x.typeURL, y.typeURL); c != 0 {
			return c
		}
		return strings.Compare(x.name, y.name)
	})
	cc := &statuspb.ClientConfig{Node: proto.Clone(node).(*corepb.Node), ClientScope: e.cfg.Target,
		GenericXdsConfigs: make([]*statuspb.ClientConfig_GenericXdsConfig, len(snaps))}
	for i := range snaps {
		cc.GenericXdsConfigs[i] = snaps[i].csds()
	}
	return cc
}

// entrySnapshot is what Dump copies of an entry under the lock.
type entrySnapshot struct {
	typeURL, name string
	state         CacheState
	cached        bool
	version       string
	raw           []byte
	updated       time.Time
	err           *Error
	failedVersion string
	failedAt      time.Time
}

func snapshotLocked(en *entry) entrySnapshot {
	var fail entryFailure
	if en.fail != nil {
		fail = *en.fail
	}
	return entrySnapshot{
		typeURL: en.typ.TypeURL, name: en.name, state: en.state, cached: en.value != nil,
		version: en.version, raw: en.raw, updated: en.updated,
		err: fail.err, failedVersion: fail.failedVersion, failedAt: fail.failedAt,
	}
}

func (s *entrySnapshot) csds() *statuspb.ClientConfig_GenericXdsConfig {
	g := &statuspb.ClientConfig_GenericXdsConfig{TypeUrl: s.typeURL, Name: s.name, ClientStatus: s.state.ClientStatus()}
	if s.cached {
		g.VersionInfo = s.version
		g.XdsConfig = &anypb.Any{TypeUrl: s.typeURL, Value: s.raw}
		g.LastUpdated = timestamppb.New(s.updated)
	}
	if s.err != nil {
		fs := &adminpb.UpdateFailureState{Details: s.err.Error(), VersionInfo: s.failedVersion}
		if !s.failedAt.IsZero() {
			fs.LastUpdateAttempt = timestamppb.New(s.failedAt)
		}
		g.ErrorState = fs
	}
	return g
}
