package xdsgrpc

import (
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
)

// DefaultFailoverTimeout is how long a priority may stay CONNECTING before
// the next one is started, as gRPC's priority policy waits (gRFC A56,
// which A27's priorities follow).
const DefaultFailoverTimeout = 10 * time.Second

// prioChild is what a priority chooses between: one priority of an EDS
// cluster's endpoints, or one leaf cluster of an aggregate cluster.
type prioChild interface {
	start()
	stop()
	sync() balancer.State
	exitIdle()
}

// priorityNode picks the highest priority that can take RPCs, as gRPC's
// priority policy does (gRFC A56): it uses priority p while p is READY or
// IDLE, or CONNECTING within its failover timer; otherwise it starts
// p+1. Lower priorities are stopped once a higher one is chosen, so
// traffic returns to p as soon as p is READY again.
type priorityNode struct {
	t         *tree
	cluster   string
	aggregate bool
	entries   []*prioEntry
	inUse     int
}

type prioEntry struct {
	child      prioChild
	started    bool
	state      balancer.State
	reportedTF bool // TRANSIENT_FAILURE more recently than READY or IDLE
	timerOn    bool // the failover timer runs
	timerGen   uint64
	timerStop  func() bool
}

// truncate stops and drops the entries from n on.
func (p *priorityNode) truncate(n int) {
	for _, e := range p.entries[min(n, len(p.entries)):] {
		p.stopEntry(e)
	}
	p.entries = p.entries[:min(n, len(p.entries))]
	if p.inUse >= len(p.entries) {
		p.inUse = 0
	}
}

func (p *priorityNode) stopEntry(e *prioEntry) {
	p.stopTimer(e)
	if e.started {
		e.started = false
		e.child.stop()
	}
	e.state, e.reportedTF = balancer.State{}, false
}

func (p *priorityNode) exitIdle() {
	for _, e := range p.entries {
		if e.started {
			e.child.exitIdle()
		}
	}
}

// sync refreshes the started children's states and chooses the priority
// in use, starting and stopping children as it must.
func (p *priorityNode) sync() balancer.State {
	if len(p.entries) == 0 {
		return balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPickerf("cluster %q: %v", p.cluster, errNoPriorities)}
	}
	for _, e := range p.entries {
		if e.started {
			p.observe(e, e.child.sync())
		}
	}
	// A child started here may fail at once (a priority without usable
	// endpoints): choose again until no child is started.
	for started := true; started; {
		for i, e := range p.entries {
			s := e.state.ConnectivityState
			if !e.started || s == connectivity.Ready || s == connectivity.Idle ||
				s == connectivity.Connecting && e.timerOn || i == len(p.entries)-1 {
				started = p.switchTo(i)
				break
			}
		}
	}
	st := p.entries[p.inUse].state
	if st.Picker == nil {
		st.Picker = queuePicker
	}
	return st
}

// observe applies a child's new state: the failover timer stops when the
// child is READY, IDLE or failed, and starts again when it goes back to
// CONNECTING from READY or IDLE; a child that failed since it was last
// READY gets no new timer (ring_hash, which starts IDLE, connects on
// demand: gRFC A42's provision).
func (p *priorityNode) observe(e *prioEntry, s balancer.State) {
	old := e.state.ConnectivityState
	switch s.ConnectivityState {
	case connectivity.Ready, connectivity.Idle:
		e.reportedTF = false
		p.stopTimer(e)
	case connectivity.TransientFailure:
		e.reportedTF = true
		p.stopTimer(e)
	case connectivity.Connecting:
		if !e.reportedTF && old != connectivity.Connecting {
			p.startTimer(e)
		}
	}
	e.state = s
}

// switchTo makes priority i the one in use and reports whether it had to
// start it.
func (p *priorityNode) switchTo(i int) bool {
	for _, lower := range p.entries[i+1:] {
		p.stopEntry(lower)
	}
	p.inUse = i
	e := p.entries[i]
	if e.started {
		return false
	}
	e.started = true
	e.reportedTF = false
	e.state = balancer.State{ConnectivityState: connectivity.Connecting, Picker: queuePicker}
	p.startTimer(e)
	e.child.start()
	p.observe(e, e.child.sync())
	return true
}

func (p *priorityNode) startTimer(e *prioEntry) {
	p.stopTimer(e)
	e.timerGen++
	gen := e.timerGen
	e.timerOn = true
	env := p.t.cfg.env
	e.timerStop = env.clock.AfterFunc(env.failover, func() {
		p.t.events.push(failoverEvent{e: e, gen: gen})
	})
}

func (p *priorityNode) stopTimer(e *prioEntry) {
	if e.timerStop != nil {
		e.timerStop()
		e.timerStop = nil
	}
	e.timerOn = false
	e.timerGen++
}

// failoverEvent is a priority's failover timer firing.
type failoverEvent struct {
	e   *prioEntry
	gen uint64
}

func (ev failoverEvent) apply() {
	if ev.e.timerGen == ev.gen && ev.e.timerOn {
		ev.e.timerOn = false
		ev.e.timerStop = nil
	}
}
