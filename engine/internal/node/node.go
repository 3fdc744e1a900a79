// Package node builds the node an engine sends in each stream's first
// request (gRFC A27): the bootstrap's node, the user agent and the
// client features.
package node

import (
	"slices"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// Client features every engine advertises (gRFC A27, and the
// envoy.service.discovery.v3.Resource wrapper in SotW).
const (
	clientFeatureNoOverprovisioning = "envoy.lb.does_not_support_overprovisioning"
	clientFeatureResourceInSotW     = "xds.config.resource-in-sotw"
)

// Build returns the node of n with the user agent and the client
// features: every engine's, then features in order, without repeats.
func Build(n bootstrap.Node, agentName, agentVersion string, features []string) *corepb.Node {
	node := &corepb.Node{Id: n.ID, Cluster: n.Cluster, Metadata: n.Metadata, UserAgentName: agentName,
		UserAgentVersionType: &corepb.Node_UserAgentVersion{UserAgentVersion: agentVersion},
		ClientFeatures:       []string{clientFeatureNoOverprovisioning, clientFeatureResourceInSotW},
	}
	if n.Locality != (bootstrap.Locality{}) {
		node.Locality = &corepb.Locality{Region: n.Locality.Region, Zone: n.Locality.Zone, SubZone: n.Locality.SubZone}
	}
	for _, f := range features {
		if !slices.Contains(node.ClientFeatures, f) {
			node.ClientFeatures = append(node.ClientFeatures, f)
		}
	}
	return node
}
