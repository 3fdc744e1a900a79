package engine

import (
	"slices"
	"strings"

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
func (e *Engine) Dump() *statuspb.ClientConfig {
	e.mu.Lock()
	defer e.mu.Unlock()
	cc := &statuspb.ClientConfig{Node: proto.Clone(e.node).(*corepb.Node), ClientScope: e.cfg.Target}
	for _, a := range e.allAuthoritiesLocked() {
		for typeURL, byName := range a.resources {
			for _, en := range byName {
				if en.orphaned {
					continue
				}
				g := &statuspb.ClientConfig_GenericXdsConfig{
					TypeUrl:      typeURL,
					Name:         en.name,
					ClientStatus: en.state.ClientStatus(),
				}
				if en.value != nil {
					g.VersionInfo = en.version
					g.XdsConfig = &anypb.Any{TypeUrl: typeURL, Value: en.raw}
					g.LastUpdated = timestamppb.New(en.updated)
				}
				if en.err != nil {
					fs := &adminpb.UpdateFailureState{Details: en.err.Error(), VersionInfo: en.failedVersion}
					if !en.failedAt.IsZero() {
						fs.LastUpdateAttempt = timestamppb.New(en.failedAt)
					}
					g.ErrorState = fs
				}
				cc.GenericXdsConfigs = append(cc.GenericXdsConfigs, g)
			}
		}
	}
	slices.SortFunc(cc.GenericXdsConfigs, func(x, y *statuspb.ClientConfig_GenericXdsConfig) int {
		if c := strings.Compare(x.TypeUrl, y.TypeUrl); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	return cc
}
