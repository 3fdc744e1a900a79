package lds

import (
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/rds"
)

// dependencies names the RouteConfiguration a Listener fetches with RDS,
// or, when its routes are inline, the clusters they name, as package rds
// reports them.
func dependencies(r registry.Resource) []registry.Ref {
	l, ok := r.(*Listener)
	if !ok || l == nil {
		return nil
	}
	if l.RouteConfig != nil {
		return rds.Type.Refs(l.RouteConfig)
	}
	if l.RouteConfigName != "" {
		return []registry.Ref{{TypeURL: rds.TypeURL, Name: l.RouteConfigName}}
	}
	return nil
}
