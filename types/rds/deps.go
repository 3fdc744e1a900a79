package rds

import "github.com/xdsengine/xdsengine/registry"

// cdsTypeURL is the type URL of envoy.config.cluster.v3.Cluster, spelled
// out so that this package does not depend on package cds.
const cdsTypeURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// dependencies names every cluster a route can send RPCs to, once each, in
// order of first use. Weighted clusters of weight zero are left out since
// no RPC reaches them, and clusters chosen by a plugin are unknown until
// an RPC is routed.
func dependencies(r registry.Resource) []registry.Ref {
	rc, ok := r.(*RouteConfiguration)
	if !ok || rc == nil {
		return nil
	}
	var refs []registry.Ref
	seen := make(map[string]bool)
	add := func(cluster string) {
		if cluster != "" && !seen[cluster] {
			seen[cluster] = true
			refs = append(refs, registry.Ref{TypeURL: cdsTypeURL, Name: cluster})
		}
	}
	for _, vh := range rc.VirtualHosts {
		for _, route := range vh.Routes {
			switch route.Action.Kind {
			case ActionCluster:
				add(route.Action.Cluster)
			case ActionWeightedClusters:
				for _, wc := range route.Action.WeightedClusters {
					if wc.Weight > 0 {
						add(wc.Name)
					}
				}
			}
		}
	}
	return refs
}
