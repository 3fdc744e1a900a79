package xdsgrpc

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/lrs"
)

// clusterNode is one cluster of a channel: for an EDS cluster, circuit
// breaking, drops and load reporting (gRFC A32, A27) over a priority of
// its endpoint groups; for an aggregate cluster, a priority over the
// nodes of its leaf clusters (gRFC A75).
type clusterNode struct {
	t       *tree
	cfg     *clusterConfig
	started bool
	prio    *priorityNode

	// circuit breaking: the process-wide counter of the cluster's
	// requests in flight (A32).
	counter    *atomic.Int64
	counterKey counterKey

	// load reporting
	lrsKey    lrsKey
	lrsStore  *lrs.Store
	lrsCancel func()
	// subconns maps each SubConn of the cluster's leaves to its
	// locality, for the load reports; read on the pick path and written
	// by leaves from any goroutine, hence a sync.Map.
	subconns sync.Map // balancer.SubConn → lrs.Locality
	lrsOn    atomic.Pointer[map[string]lrs.Locality]

	state  balancer.State
	impl   *implPicker
	errPkr balancer.Picker
}

// lrsKey says where a cluster's load goes: ServerConfig holds slices,
// so the key holds its text.
type lrsKey struct {
	server, cluster, service string
}

func newClusterNode(t *tree) *clusterNode { return &clusterNode{t: t} }

// reporter is the channel's load reporter, or nil.
func (t *tree) reporter() *lrs.Client {
	if t.cfg == nil {
		return nil
	}
	return t.cfg.env.lrs
}

// update sets the node's configuration; a started node applies it.
func (n *clusterNode) update(c *clusterConfig) {
	same := c.sameAs(n.cfg)
	n.cfg = c
	if n.started && !same {
		n.apply()
	}
}

func (n *clusterNode) start() {
	n.started = true
	n.apply()
}

func (n *clusterNode) apply() {
	c := n.cfg
	if c.err != nil {
		n.stopChildren()
		n.releaseImpl()
		n.errPkr = base.NewErrPicker(c.err)
		return
	}
	n.errPkr = nil
	if c.aggregate() {
		n.releaseImpl()
		n.applyAggregate()
		return
	}
	n.acquireImpl()
	if n.prio == nil || n.prio.aggregate {
		n.stopChildren()
		n.prio = &priorityNode{t: n.t, cluster: c.name}
	}
	p := n.prio
	for i, locs := range c.priorities {
		if i < len(p.entries) {
			p.entries[i].child.(*groupNode).update(locs, c)
			continue
		}
		g := &groupNode{c: n, index: i}
		g.update(locs, c)
		p.entries = append(p.entries, &prioEntry{child: g})
	}
	p.truncate(len(c.priorities))
}

func (n *clusterNode) applyAggregate() {
	c := n.cfg
	if n.prio == nil || !n.prio.aggregate {
		n.stopChildren()
		n.prio = &priorityNode{t: n.t, cluster: c.name, aggregate: true}
	}
	p := n.prio
	byName := map[string]*prioEntry{}
	for _, e := range p.entries {
		byName[e.child.(*clusterNode).cfg.name] = e
	}
	var entries []*prioEntry
	for _, child := range c.children {
		e := byName[child.name]
		if e == nil {
			e = &prioEntry{child: newClusterNode(n.t)}
		} else {
			delete(byName, child.name)
		}
		e.child.(*clusterNode).update(child)
		entries = append(entries, e)
	}
	for _, e := range byName {
		p.stopEntry(e)
	}
	p.entries = entries
	p.inUse = 0
}

func (n *clusterNode) stopChildren() {
	if n.prio != nil {
		n.prio.truncate(0)
		n.prio = nil
	}
}

func (n *clusterNode) stop() {
	n.started = false
	n.stopChildren()
	n.releaseImpl()
}

func (n *clusterNode) exitIdle() {
	if n.prio != nil {
		n.prio.exitIdle()
	}
}

// acquireImpl takes the cluster's circuit breaking counter and load
// reporting store, if it does not have those of its configuration.
func (n *clusterNode) acquireImpl() {
	c := n.cfg
	ck := counterKey{cluster: c.name, service: c.cluster.EDSName()}
	if n.counter == nil || n.counterKey != ck {
		if n.counter != nil {
			releaseCounter(n.counterKey)
		}
		n.counter, n.counterKey = acquireCounter(ck), ck
	}
	var lk lrsKey
	reporter := n.t.reporter()
	if c.cluster.LoadReporting && reporter != nil && c.server.URI != "" {
		lk = lrsKey{server: c.server.String(), cluster: c.name, service: c.cluster.EDSName()}
	}
	if lk != n.lrsKey || n.lrsStore == nil && lk.cluster != "" {
		n.cancelLRS()
		if lk.cluster != "" {
			n.lrsStore, n.lrsCancel = reporter.ReportLoad(c.server, lk.cluster, lk.service)
		}
		n.lrsKey = lk
	}
	if n.lrsStore != nil {
		m := c.localityOf
		n.lrsOn.Store(&m)
	} else {
		n.lrsOn.Store(nil)
	}
}

func (n *clusterNode) cancelLRS() {
	if n.lrsCancel != nil {
		n.lrsCancel()
	}
	n.lrsStore, n.lrsCancel, n.lrsKey = nil, nil, lrsKey{}
	n.lrsOn.Store(nil)
}

func (n *clusterNode) releaseImpl() {
	if n.counter != nil {
		releaseCounter(n.counterKey)
		n.counter, n.counterKey = nil, counterKey{}
	}
	n.cancelLRS()
	n.impl = nil
}

// sync brings the node's subtree up to date and returns its state, with
// the picker RPCs routed to the cluster use.
func (n *clusterNode) sync() balancer.State {
	switch {
	case !n.started:
		n.state = balancer.State{ConnectivityState: connectivity.Idle, Picker: queuePicker}
	case n.errPkr != nil:
		n.state = balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: n.errPkr}
	default:
		s := n.prio.sync()
		if !n.cfg.aggregate() {
			s.Picker = n.implFor(s.Picker)
		}
		n.state = s
	}
	return n.state
}

// implFor wraps the cluster's picker in circuit breaking, drops and load
// reporting; the wrapper is kept while neither changes.
func (n *clusterNode) implFor(child balancer.Picker) balancer.Picker {
	c := n.cfg
	if im := n.impl; im != nil && samePicker(im.child, child) && im.cfg == c && im.store == n.lrsStore {
		return im
	}
	im := &implPicker{child: child, cfg: c, counter: n.counter, max: int64(c.cluster.MaxRequests), store: n.lrsStore, subconns: &n.subconns}
	for _, d := range c.drops {
		im.drops = append(im.drops, drop{category: d.Category, ppm: d.PartsPerMillion})
	}
	counter := n.counter
	im.release = func(balancer.DoneInfo) { counter.Add(-1) }
	if n.lrsStore != nil {
		im.stats = map[lrs.Locality]*lrs.LocalityStats{}
		for _, loc := range c.localityOf {
			if im.stats[loc] == nil {
				im.stats[loc] = n.lrsStore.Locality(loc)
			}
		}
	}
	n.impl = im
	return im
}

type drop struct {
	category string
	ppm      uint32
}

// implPicker is the part of a cluster's picker gRPC puts in its
// xds_cluster_impl policy: drops (EDS drop_overloads), circuit breaking
// (max_requests, gRFC A32) and the load report's counters (gRFC A27).
type implPicker struct {
	child    balancer.Picker
	cfg      *clusterConfig
	drops    []drop
	counter  *atomic.Int64
	max      int64
	release  func(balancer.DoneInfo)
	store    *lrs.Store
	subconns *sync.Map
	stats    map[lrs.Locality]*lrs.LocalityStats
}

func (p *implPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	for _, d := range p.drops {
		if rand.Uint32N(1_000_000) < d.ppm {
			if p.store != nil {
				p.store.CallDropped(d.category)
			}
			return balancer.PickResult{}, status.Errorf(codes.Unavailable, "xds: RPC dropped by cluster %q's drop_overloads (category %q)", p.cfg.name, d.category)
		}
	}
	if p.counter.Add(1) > p.max {
		p.counter.Add(-1)
		if p.store != nil {
			p.store.CallDropped("")
		}
		return balancer.PickResult{}, status.Errorf(codes.Unavailable, "xds: cluster %q has reached its circuit breaking limit of %d requests in flight (max_requests)", p.cfg.name, p.max)
	}
	res, err := p.child.Pick(info)
	if err != nil {
		p.counter.Add(-1)
		return res, err
	}
	childDone := res.Done
	if p.store != nil {
		var stats *lrs.LocalityStats
		if loc, ok := p.subconns.Load(res.SubConn); ok {
			stats = p.stats[loc.(lrs.Locality)]
		}
		if stats != nil {
			stats.CallStarted()
		}
		counter := p.counter
		res.Done = func(di balancer.DoneInfo) {
			counter.Add(-1)
			if stats != nil {
				stats.CallFinished(di.Err)
			}
			if childDone != nil {
				childDone(di)
			}
		}
		return res, nil
	}
	if childDone == nil {
		res.Done = p.release
	} else {
		counter := p.counter
		res.Done = func(di balancer.DoneInfo) {
			counter.Add(-1)
			childDone(di)
		}
	}
	return res, nil
}

// counterKey names a circuit breaking counter: gRPC shares one per
// cluster and EDS service name across the process (gRFC A32).
type counterKey struct{ cluster, service string }

var counters = struct {
	sync.Mutex
	m map[counterKey]*sharedCounter
}{m: map[counterKey]*sharedCounter{}}

type sharedCounter struct {
	n    atomic.Int64
	refs int
}

func acquireCounter(k counterKey) *atomic.Int64 {
	counters.Lock()
	defer counters.Unlock()
	c := counters.m[k]
	if c == nil {
		c = &sharedCounter{}
		counters.m[k] = c
	}
	c.refs++
	return &c.n
}

func releaseCounter(k counterKey) {
	counters.Lock()
	defer counters.Unlock()
	if c := counters.m[k]; c != nil {
		if c.refs--; c.refs <= 0 {
			delete(counters.m, k)
		}
	}
}

// errPickerf is a picker that fails picks with a plain error: grpc-go
// fails RPCs that are not wait-for-ready with UNAVAILABLE and holds the
// others, as for a channel in TRANSIENT_FAILURE.
func errPickerf(format string, args ...any) balancer.Picker {
	return base.NewErrPicker(fmt.Errorf(format, args...))
}
