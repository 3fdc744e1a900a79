package xdsgrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/serviceconfig"
)

// BalancerName is the name under which this package registers its
// balancer with grpc-go, and which the resolver's service config selects.
// grpc-go finds balancers only by name in its global registry, so this
// package registers it when imported; nothing else is registered.
const BalancerName = "xdsengine_experimental"

// registerBalancer registers the balancer with grpc-go, which finds
// balancers by name in a registry of its own: once, when the first
// Builder is made, rather than as a side effect of importing the package.
var registerBalancer = sync.OnceFunc(func() { balancer.Register(balancerBuilder{}) })

type balancerBuilder struct{}

func (balancerBuilder) Name() string { return BalancerName }

func (balancerBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	t := &tree{cc: cc, bopts: opts, clusters: map[string]*clusterNode{}, done: make(chan struct{})}
	t.events.wake = make(chan struct{}, 1)
	t.wg.Add(1)
	go t.run()
	return t
}

// ParseConfig accepts the empty config the resolver's service config
// carries: the configuration itself comes in the resolver state's
// attributes, as a value no JSON can hold.
func (balancerBuilder) ParseConfig(json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return lbConfig{}, nil
}

type lbConfig struct {
	serviceconfig.LoadBalancingConfig
}

// configKey keys the channelConfig in the resolver state's attributes.
type configKey struct{}

// tree is a channel's balancer: the routing picker on top, one node per
// cluster below it, and under each the priorities, localities and
// grpc-go's own balancers (the leaves).
//
// Every call into a leaf is made with mu held, from grpc-go's balancer
// goroutine or from run; leaves report their state back through the
// event queue, never under mu, since they may report from inside a call
// we make. run applies those reports, and the failover timers' events,
// then publishes one picker for the batch.
type tree struct {
	cc    balancer.ClientConn
	bopts balancer.BuildOptions

	events eventQueue
	done   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	cfg      *channelConfig
	clusters map[string]*clusterNode
	initErr  error // a resolver error before any configuration
	last     *picker
	lastSt   connectivity.State
}

func (t *tree) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, _ := s.ResolverState.Attributes.Value(configKey{}).(*channelConfig)
	if cfg == nil {
		return fmt.Errorf("%s: the resolver state carries no xDS configuration: %w", BalancerName, balancer.ErrBadResolverState)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.cfg = cfg
	keep := map[string]*clusterNode{}
	if cfg.err == nil {
		for _, c := range cfg.clusters {
			n := t.clusters[c.name]
			if n == nil {
				n = newClusterNode(t)
			}
			n.update(c)
			if !n.started {
				n.start()
			}
			keep[c.name] = n
		}
	}
	for name, n := range t.clusters {
		if keep[name] == nil {
			n.stop()
		}
	}
	t.clusters = keep
	t.publishLocked()
	return nil
}

// ResolverError fails the channel only when it has no configuration yet:
// after one, the resolver's errors are ambient (gRFC A88) and the last
// configuration stays in use.
func (t *tree) ResolverError(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.cfg != nil {
		return
	}
	t.initErr = err
	t.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: base.NewErrPicker(err)})
}

func (t *tree) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

func (t *tree) ExitIdle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	for _, n := range t.clusters {
		n.exitIdle()
	}
}

func (t *tree) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	for _, n := range t.clusters {
		n.stop()
	}
	t.clusters = nil
	t.mu.Unlock()
	close(t.done)
	t.wg.Wait()
}

// run applies the leaves' state reports and the timers' events.
func (t *tree) run() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		case <-t.events.wake:
		}
		evs := t.events.take()
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return
		}
		for _, ev := range evs {
			ev.apply()
		}
		t.publishLocked()
		t.mu.Unlock()
	}
}

// publishLocked brings every node up to date and gives grpc-go the
// resulting picker, unless nothing it shows changed.
func (t *tree) publishLocked() {
	cfg := t.cfg
	if cfg == nil {
		return
	}
	p := &picker{cfg: cfg}
	var st connectivity.State
	if cfg.err != nil {
		st = connectivity.TransientFailure
	} else {
		p.clusters = make([]balancer.Picker, len(cfg.clusters))
		var states []connectivity.State
		for i, c := range cfg.clusters {
			n := t.clusters[c.name]
			s := n.sync()
			p.clusters[i] = s.Picker
			states = append(states, s.ConnectivityState)
		}
		st = aggregate(states)
	}
	if t.last != nil && st == t.lastSt && t.last.same(p) {
		return
	}
	t.last, t.lastSt = p, st
	t.cc.UpdateState(balancer.State{ConnectivityState: st, Picker: p})
}

// aggregate is the state of a parent whose children are in states, as
// gRPC's balancers aggregate: READY if one is, else CONNECTING, else IDLE,
// else TRANSIENT_FAILURE.
func aggregate(states []connectivity.State) connectivity.State {
	var connecting, idle bool
	for _, s := range states {
		switch s {
		case connectivity.Ready:
			return connectivity.Ready
		case connectivity.Connecting:
			connecting = true
		case connectivity.Idle:
			idle = true
		}
	}
	switch {
	case connecting:
		return connectivity.Connecting
	case idle:
		return connectivity.Idle
	}
	return connectivity.TransientFailure
}

// event is something run applies under the tree's lock.
type event interface{ apply() }

// eventQueue is an unbounded queue that never blocks its writers, so a
// leaf may report from anywhere, including from inside a call the tree
// makes with its lock held.
type eventQueue struct {
	mu   sync.Mutex
	evs  []event
	wake chan struct{}
}

func (q *eventQueue) push(ev event) {
	q.mu.Lock()
	q.evs = append(q.evs, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *eventQueue) take() []event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.evs
	q.evs = nil
	return evs
}

// queuePicker holds RPCs until the next picker: a node that has not
// reported yet.
var queuePicker = base.NewErrPicker(balancer.ErrNoSubConnAvailable)

var errNoPriorities = errors.New("no priorities")
