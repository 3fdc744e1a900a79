// Package dump builds the engine's CSDS view (gRFC A40) from snapshots
// of its cache entries, once the engine's lock is released: a dump of
// 100,000 resources does not stall the streams.
package dump

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

// Entry is what the engine copies of a cache entry under its lock: all
// immutable values (cached bytes and errors are replaced, never
// modified).
type Entry struct {
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

// Config returns the entry as CSDS shows it.
func (s *Entry) Config() *statuspb.ClientConfig_GenericXdsConfig {
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

// ClientConfig returns the entries, sorted by type URL and name, as the
// ClientConfig of a client with node (copied) and scope.
func ClientConfig(node *corepb.Node, scope string, entries []Entry) *statuspb.ClientConfig {
	slices.SortFunc(entries, func(x, y Entry) int {
		if c := strings.Compare(x.TypeURL, y.TypeURL); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	cc := &statuspb.ClientConfig{Node: proto.Clone(node).(*corepb.Node), ClientScope: scope,
		GenericXdsConfigs: make([]*statuspb.ClientConfig_GenericXdsConfig, len(entries))}
	for i := range entries {
		cc.GenericXdsConfigs[i] = entries[i].Config()
	}
	return cc
}
