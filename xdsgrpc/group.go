package xdsgrpc

import (
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/xdsengine/xdsengine/types/eds"
)

// groupNode is one priority of an EDS cluster: its endpoints under the
// cluster's policy, either in one leaf, or in a leaf per locality picked
// by locality weight (wrr_locality, gRFC A52).
type groupNode struct {
	c     *clusterNode
	index int

	localities []localityConfig
	policy     policy
	cfg        *clusterConfig
	started    bool

	flat   *leaf
	byLoc  []*leaf // in the order of localities
	locIDs []eds.LocalityID

	state  balancer.State
	picked *localityPicker
}

func (g *groupNode) update(locs []localityConfig, c *clusterConfig) {
	g.localities, g.policy, g.cfg = locs, c.policy, c
	if g.started {
		g.apply()
	}
}

func (g *groupNode) start() {
	g.started = true
	g.apply()
}

func (g *groupNode) stop() {
	g.started = false
	g.closeLeaves()
}

func (g *groupNode) closeLeaves() {
	if g.flat != nil {
		g.flat.close()
		g.flat = nil
	}
	for _, l := range g.byLoc {
		l.close()
	}
	g.byLoc, g.locIDs, g.picked = nil, nil, nil
}

func (g *groupNode) exitIdle() {
	if g.flat != nil {
		g.flat.exitIdle()
	}
	for _, l := range g.byLoc {
		l.exitIdle()
	}
}

func (g *groupNode) apply() {
	if !g.policy.byLocality {
		if g.byLoc != nil {
			g.closeLeaves()
		}
		var eps []resolver.Endpoint
		for _, l := range g.localities {
			eps = append(eps, l.endpoints...)
		}
		if g.flat == nil {
			g.flat = g.newLeaf()
		}
		g.flat.update(eps, g.policy.leaf)
		return
	}
	if g.flat != nil {
		g.closeLeaves()
	}
	old := map[eds.LocalityID]*leaf{}
	for i, l := range g.byLoc {
		old[g.locIDs[i]] = l
	}
	g.byLoc, g.locIDs = g.byLoc[:0], g.locIDs[:0]
	for _, loc := range g.localities {
		l := old[loc.id]
		if l == nil {
			l = g.newLeaf()
		} else {
			delete(old, loc.id)
		}
		l.update(loc.endpoints, g.policy.leaf)
		g.byLoc = append(g.byLoc, l)
		g.locIDs = append(g.locIDs, loc.id)
	}
	for _, l := range old {
		l.close()
	}
	g.picked = nil
}

func (g *groupNode) newLeaf() *leaf {
	return &leaf{t: g.c.t, cluster: g.c, group: g}
}

// sync returns the group's state: its leaf's, or the locality layer's.
func (g *groupNode) sync() balancer.State {
	if g.flat != nil {
		g.state = g.flat.current()
		return g.state
	}
	if len(g.byLoc) == 0 {
		g.state = balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: g.noEndpoints()}
		return g.state
	}
	states := make([]connectivity.State, len(g.byLoc))
	var ready []int
	var first [3]balancer.Picker // by state: connecting, idle, failure
	for i, l := range g.byLoc {
		s := l.current()
		states[i] = s.ConnectivityState
		switch s.ConnectivityState {
		case connectivity.Ready:
			ready = append(ready, i)
		case connectivity.Connecting:
			if first[0] == nil {
				first[0] = s.Picker
			}
		case connectivity.Idle:
			if first[1] == nil {
				first[1] = s.Picker
			}
		case connectivity.TransientFailure:
			if first[2] == nil {
				first[2] = s.Picker
			}
		}
	}
	st := aggregate(states)
	switch st {
	case connectivity.Ready:
		// Only READY localities take RPCs, by weight, as gRPC's
		// weighted_target picks.
		pickers := make([]balancer.Picker, len(ready))
		weights := make([]uint32, len(ready))
		for j, i := range ready {
			pickers[j] = g.byLoc[i].current().Picker
			weights[j] = g.localities[i].weight
		}
		if lp := g.picked; lp != nil && lp.same(pickers, weights) {
			g.state = balancer.State{ConnectivityState: st, Picker: lp}
			return g.state
		}
		lp := &localityPicker{pickers: pickers, weights: weights, cum: cumulative(weights), seq: new(atomic.Uint64)}
		if lp.cum == nil {
			lp.cum = cumulative(make1s(len(weights)))
		}
		g.picked = lp
		g.state = balancer.State{ConnectivityState: st, Picker: lp}
	case connectivity.Connecting:
		g.state = balancer.State{ConnectivityState: st, Picker: queuePicker}
	case connectivity.Idle:
		// An IDLE leaf's picker starts it connecting.
		g.state = balancer.State{ConnectivityState: st, Picker: first[1]}
	default:
		g.state = balancer.State{ConnectivityState: st, Picker: first[2]}
	}
	return g.state
}

func (g *groupNode) noEndpoints() balancer.Picker {
	c := g.cfg
	if c.edsErr != nil {
		return errPickerf("cluster %q: %v", c.name, c.edsErr)
	}
	return errPickerf("cluster %q: priority %d has no usable endpoints (%s)", c.name, g.index, c.note)
}

func make1s(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// localityPicker spreads RPCs over READY localities by weight.
type localityPicker struct {
	pickers []balancer.Picker
	weights []uint32
	cum     []uint64
	seq     *atomic.Uint64
}

func (p *localityPicker) same(pickers []balancer.Picker, weights []uint32) bool {
	if len(pickers) != len(p.pickers) {
		return false
	}
	for i := range pickers {
		if !samePicker(pickers[i], p.pickers[i]) || weights[i] != p.weights[i] {
			return false
		}
	}
	return true
}

func (p *localityPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	if len(p.pickers) == 1 {
		return p.pickers[0].Pick(info)
	}
	return p.pickers[pickWeighted(p.cum, p.seq.Add(golden))].Pick(info)
}

// leaf is one of grpc-go's balancers (round_robin, ring_hash, a
// program's own, ...) over a set of endpoints.
type leaf struct {
	t       *tree
	cluster *clusterNode
	group   *groupNode

	pol       leafPolicy
	endpoints []resolver.Endpoint
	b         balancer.Balancer
	cc        *leafCC // b's: reports of an earlier balancer are dropped
	state     balancer.State
	hasState  bool
	closed    bool
}

// update gives the leaf its endpoints and policy, building the balancer
// when there is none or the policy changed.
func (l *leaf) update(eps []resolver.Endpoint, pol leafPolicy) {
	if l.b != nil && pol.name != l.pol.name {
		l.b.Close()
		l.b, l.hasState = nil, false
	}
	l.pol, l.endpoints = pol, eps
	if len(eps) == 0 {
		// No endpoint is usable: fail here rather than hand grpc-go's
		// balancers an empty list, which each treats its own way.
		if l.b != nil {
			l.b.Close()
			l.b = nil
		}
		l.state, l.hasState = balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: l.group.noEndpoints()}, true
		return
	}
	if l.b == nil {
		l.hasState = false
		l.cc = &leafCC{ClientConn: l.t.cc, l: l}
		l.b = pol.builder.Build(l.cc, l.t.bopts)
	}
	err := l.b.UpdateClientConnState(balancer.ClientConnState{
		ResolverState:  resolver.State{Endpoints: eps},
		BalancerConfig: pol.config,
	})
	if err != nil && !l.hasState {
		l.state, l.hasState = balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPickerf("cluster %q: %s: %v", l.cluster.cfg.name, pol.name, err)}, true
	}
}

func (l *leaf) current() balancer.State {
	if !l.hasState {
		return balancer.State{ConnectivityState: connectivity.Connecting, Picker: queuePicker}
	}
	return l.state
}

func (l *leaf) close() {
	l.closed = true
	if l.b != nil {
		l.b.Close()
		l.b = nil
	}
}

func (l *leaf) exitIdle() {
	if l.b != nil {
		l.b.ExitIdle()
	}
}

// leafEvent is a leaf balancer's new state.
type leafEvent struct {
	cc *leafCC
	s  balancer.State
}

func (ev leafEvent) apply() {
	l := ev.cc.l
	if l.closed || l.b == nil || l.cc != ev.cc {
		return
	}
	l.state, l.hasState = ev.s, true
}

// leafCC is the ClientConn a leaf balancer sees: grpc-go's own, whose
// state reports go to the tree's queue, and whose SubConns are mapped to
// their locality when the cluster reports load.
type leafCC struct {
	balancer.ClientConn
	l *leaf
}

func (c *leafCC) UpdateState(s balancer.State) { c.l.t.events.push(leafEvent{cc: c, s: s}) }

// ResolveNow is ignored: the xDS server pushes endpoint changes.
func (c *leafCC) ResolveNow(resolver.ResolveNowOptions) {}

// NewSubConn is deprecated only for SubConns of several addresses; it is
// how every balancer makes SubConns, and the one place a parent sees
// them made.
func (c *leafCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	n := c.l.cluster
	locs := n.lrsOn.Load()
	if locs == nil || len(addrs) == 0 {
		//lint:ignore SA1019 see above
		return c.ClientConn.NewSubConn(addrs, opts)
	}
	loc, ok := (*locs)[addrs[0].Addr]
	if !ok {
		//lint:ignore SA1019 see above
		return c.ClientConn.NewSubConn(addrs, opts)
	}
	var self atomic.Pointer[balancer.SubConn]
	listener := opts.StateListener
	opts.StateListener = func(s balancer.SubConnState) {
		if s.ConnectivityState == connectivity.Shutdown {
			if sc := self.Load(); sc != nil {
				n.subconns.Delete(*sc)
			}
		}
		if listener != nil {
			listener(s)
		}
	}
	//lint:ignore SA1019 see above
	sc, err := c.ClientConn.NewSubConn(addrs, opts)
	if err != nil {
		return nil, err
	}
	self.Store(&sc)
	n.subconns.Store(sc, loc)
	return sc, nil
}
