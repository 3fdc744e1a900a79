package lds

import (
	"fmt"
	"slices"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/rds"
)

// dependencies names what a Listener needs besides itself. An API
// listener needs the RouteConfiguration it fetches with RDS or, when its
// routes are inline, the clusters they name, as package rds reports them.
// A server's Listener needs the RouteConfigurations its filter chains
// fetch with RDS, once each: a gRPC server watches no clusters.
func dependencies(r registry.Resource) []registry.Ref {
	l, ok := r.(*Listener)
	if !ok || l == nil {
		return nil
	}
	if s := l.Server; s != nil {
		var refs []registry.Ref
		s.eachChain(func(c *FilterChain) {
			ref := registry.Ref{TypeURL: rds.TypeURL, Name: c.HTTP.RouteConfigName}
			if ref.Name != "" && !slices.Contains(refs, ref) {
				refs = append(refs, ref)
			}
		})
		return refs
	}
	if l.RouteConfig != nil {
		return rds.Type.Refs(l.RouteConfig)
	}
	if l.RouteConfigName != "" {
		return []registry.Ref{{TypeURL: rds.TypeURL, Name: l.RouteConfigName}}
	}
	return nil
}

// eachChain calls f for every filter chain, the default one last.
func (s *ServerListener) eachChain(f func(c *FilterChain)) {
	for i := range s.FilterChains {
		f(&s.FilterChains[i])
	}
	if s.DefaultFilterChain != nil {
		f(s.DefaultFilterChain)
	}
}

// Compose implements registry.Composer, so that package graph resolves a
// server's Listener with its routes: in the result, every filter chain
// that fetches its routes with RDS also has them in HTTP.RouteConfig, so
// each chain says which RouteConfiguration it uses. The receiver is not
// changed. An API listener is returned as it is.
func (l *Listener) Compose(lookup func(registry.Ref) (registry.Resource, bool)) (registry.Resource, error) {
	if l.Server == nil {
		return l, nil
	}
	out := *l
	s := *l.Server
	s.FilterChains = slices.Clone(s.FilterChains)
	if s.DefaultFilterChain != nil {
		dfc := *s.DefaultFilterChain
		s.DefaultFilterChain = &dfc
	}
	var err error
	s.eachChain(func(c *FilterChain) {
		name := c.HTTP.RouteConfigName
		if name == "" || err != nil {
			return
		}
		r, ok := lookup(registry.Ref{TypeURL: rds.TypeURL, Name: name})
		rc, isRC := r.(*rds.RouteConfiguration)
		switch {
		case !ok:
			err = fmt.Errorf("RouteConfiguration %q is not resolved", name)
		case !isRC:
			err = fmt.Errorf("RouteConfiguration %q resolved to %T, want *rds.RouteConfiguration", name, r)
		default:
			c.HTTP.RouteConfig = rc
		}
	})
	if err != nil {
		return nil, err
	}
	out.Server = &s
	return &out, nil
}

var _ registry.Composer = (*Listener)(nil)

// ShallowDependencies reports whether l is a server's Listener, whose
// RouteConfigurations are all it needs: a gRPC server watches no clusters.
// Package graph then follows no further (graph.Shallow).
func (l *Listener) ShallowDependencies() bool { return l.Server != nil }
