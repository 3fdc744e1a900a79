package gcpmatrix

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
)

// Protocol is the xDS variant a client speaks to the server.
type Protocol struct {
	Name string
	// Features are the bootstrap server_features that select it.
	Features []string
}

// Protocols are State of the World, and incremental xDS, which the
// engine speaks to a server whose server_features list "delta_xds".
var Protocols = []Protocol{{Name: "sotw"}, {Name: "delta", Features: []string{features.NameDeltaXDS}}}

// Shape is how the clients of a cell subscribe, to every type the server
// serves.
type Shape string

const (
	// Named watches the first two resources of each type by name.
	Named Shape = "named"
	// Wildcard watches every resource of each type (Engine.WatchAll).
	Wildcard Shape = "wildcard"
	// NamedThenWildcard watches the first resource by name, waits for it,
	// then adds a wildcard, which must get every resource, the one
	// already held included, and its complete signal.
	NamedThenWildcard Shape = "named-then-wildcard"
	// AllNamedThenWildcard watches every resource by name before the
	// wildcard: the server has nothing the stream lacks, which is where
	// a LinearCache sends nothing in answer to the wildcard.
	AllNamedThenWildcard Shape = "all-named-then-wildcard"
)

// Shapes are the subscription shapes of the matrix.
var Shapes = []Shape{Named, Wildcard, NamedThenWildcard, AllNamedThenWildcard}

// Cell is one cell of the matrix.
type Cell struct {
	Kind     Kind
	Protocol Protocol
	Shape    Shape
}

// Name is the cell's subtest name for a subject ("engine", "relay"),
// such as "SnapshotCache/sotw/named-then-wildcard/engine".
func (c Cell) Name(subject string) string {
	return fmt.Sprintf("%s/%s/%s/%s", c.Kind, c.Protocol.Name, c.Shape, subject)
}

// Cells is every cache × protocol × shape. Each applies: the LinearCache
// serves Clusters alone, which every shape exercises; the MuxCache puts a
// LinearCache's Clusters and a SnapshotCache's Listeners behind one
// stream, which neither cache alone does, in every shape.
func Cells() []Cell {
	var out []Cell
	for _, k := range Kinds {
		for _, p := range Protocols {
			for _, s := range Shapes {
				out = append(out, Cell{k, p, s})
			}
		}
	}
	return out
}

// The bounds of the checks.
const (
	// DeliveryBound is how long resources may take to reach a client.
	DeliveryBound = 5 * time.Second
	// Window is the quiet time over which requests and responses are
	// counted.
	Window = time.Second
	// Slack is what the request and response bounds allow beyond one per
	// type: an ACK of the last response, a response and its ACK that
	// straddle the window's start.
	Slack = 2
	// HealthBound is how long after the server's return the client may
	// take to be Connected again.
	HealthBound = 2 * time.Second
	// outageBound is how long the client may take to notice the outage.
	outageBound = 5 * time.Second
	// lateBound is how long past HealthBound a failing cell still watches
	// the client, only to say in its failure whether health came back.
	lateBound = 5 * time.Second
)

// Client is one xDS client of a cell: the engine under test, or a
// relay's downstream client.
type Client struct {
	Name   string
	Engine *engine.Engine
}

// Subject is what a cell checks.
type Subject struct {
	// ByName are the clients that watch by name.
	ByName []Client
	// Wildcards returns the clients that watch every resource, when the
	// shape makes its wildcards: the engine itself, or a relay's new
	// downstream clients.
	Wildcards func() []Client
	// Health says whether the subject's upstream is connected (engine
	// Authorities, relay Status), and its error.
	Health func() (connected bool, err error)
}

// Check runs a cell's shape against srv and checks delivery, requests
// in a quiet window, and health after an outage. Each failure is a
// separate error naming the check, so one run shows all of a cell's
// symptoms.
func Check(c *C, cell Cell, srv *Server, subj Subject) {
	served := srv.Served()
	typeURLs := slices.Sorted(maps.Keys(served))
	byName := func(pick func([]string) []string) []*Got {
		var out []*Got
		for _, cl := range subj.ByName {
			for _, tu := range typeURLs {
				names := pick(served[tu])
				g := newGot(cl.Name, tu, names, false)
				for _, n := range names {
					cl.Engine.Watch(tu, n, g.Named(n))
				}
				out = append(out, g)
			}
		}
		return out
	}
	wildcards := func() []*Got {
		var out []*Got
		for _, cl := range subj.Wildcards() {
			for _, tu := range typeURLs {
				g := newGot(cl.Name, tu, served[tu], true)
				cl.Engine.WatchAll(tu, g)
				out = append(out, g)
			}
		}
		return out
	}
	first := func(n int) func([]string) []string { return func(s []string) []string { return s[:n] } }
	all := func(s []string) []string { return s }
	switch cell.Shape {
	case Named:
		expect(c, "(a) delivery", byName(first(2)))
	case Wildcard:
		expect(c, "(a) delivery", wildcards())
	case NamedThenWildcard:
		expect(c, "(a) delivery by name, before the wildcard", byName(first(1)))
		expect(c, "(a) delivery to the wildcard", wildcards())
	case AllNamedThenWildcard:
		expect(c, "(a) delivery by name, before the wildcard", byName(all))
		expect(c, "(a) delivery to the wildcard", wildcards())
	}
	quiet(c, srv, len(typeURLs))
	outage(c, srv, subj)
}

func expect(c *C, what string, gots []*Got) {
	deadline := time.Now().Add(DeliveryBound)
	for _, g := range gots {
		if !g.waitDelivered(deadline) {
			c.Errorf("%s: not within %v: %v", what, DeliveryBound, g)
		}
	}
}

// quiet counts what crosses the stream while nothing changes on the
// server: the client has what it asked for, so it asks little, and the
// server has nothing new, so it answers little.
func quiet(c *C, srv *Server, types int) {
	r0, s0 := srv.Counts()
	time.Sleep(Window) // a measurement, not a wait for an event
	r1, s1 := srv.Counts()
	reqs, resps := r1-r0, s1-s0
	maxResps := int64(types + Slack)
	maxReqs := resps + int64(types+Slack)
	c.Logf("(b) in %v with nothing changing: %d requests, %d responses", Window, reqs, resps)
	if reqs <= maxReqs && resps <= maxResps {
		return
	}
	storm := ""
	if reqs > 10*maxReqs || resps > 10*maxResps {
		storm = ": a storm"
	}
	req, resp := srv.Last()
	c.Errorf("(b) requests: in %v with nothing changing, the server got %d requests and sent %d responses, want at most %d requests (responses + %d types + %d) and %d responses (%d types + %d)%s; last request: %s; last response: %s",
		Window, reqs, resps, maxReqs, types, Slack, maxResps, types, Slack, storm, req, resp)
}

// outage stops the server, waits for the subject to notice, restarts the
// server and checks that the subject is Connected within HealthBound of
// the restart: the bound runs from the server's return, since the
// reconnection itself takes the subjects' short backoffs (tens of
// milliseconds), not the outage's length.
func outage(c *C, srv *Server, subj Subject) {
	srv.Stop()
	if !poll(time.Now().Add(outageBound), func() bool { ok, _ := subj.Health(); return !ok }) {
		c.Errorf("(c) health: still Connected %v after the server stopped", outageBound)
	}
	if err := srv.Restart(); err != nil {
		c.Errorf("(c) health: %v", err)
		return
	}
	back := time.Now()
	r0, s0 := srv.Counts()
	healthy := func() bool { ok, _ := subj.Health(); return ok }
	if poll(back.Add(HealthBound), healthy) {
		c.Logf("(c) Connected %v after the server's return", time.Since(back).Round(time.Millisecond))
		return
	}
	late := "not Connected " + (HealthBound + lateBound).String() + " after it either"
	if poll(back.Add(HealthBound+lateBound), healthy) {
		late = fmt.Sprintf("Connected only %v after it", time.Since(back).Round(10*time.Millisecond))
	}
	r1, s1 := srv.Counts()
	_, err := subj.Health()
	req, resp := srv.Last()
	c.Errorf("(c) health: not Connected within %v of the server's return (%s); meanwhile the server got %d requests and sent %d responses (last request: %s; last response: %s); Err %v",
		HealthBound, late, r1-r0, s1-s0, req, resp, err)
}

// poll reports whether cond held before deadline.
func poll(deadline time.Time, cond func() bool) bool {
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// C is a running cell: its errors go to its subtest, and its cleanups run
// as soon as its checks end, so that a cell stuck in a storm stops
// loading the machine before the others' checks are done.
type C struct {
	t        *testing.T
	mu       sync.Mutex
	cleanups []func()
}

// Errorf reports a failure of the cell.
func (c *C) Errorf(format string, args ...any) { c.t.Helper(); c.t.Errorf(format, args...) }

// Logf logs to the cell's subtest.
func (c *C) Logf(format string, args ...any) { c.t.Helper(); c.t.Logf(format, args...) }

// Cleanup registers f to run when the cell's checks end, last first.
func (c *C) Cleanup(f func()) {
	c.mu.Lock()
	c.cleanups = append(c.cleanups, f)
	c.mu.Unlock()
}

func (c *C) cleanup() {
	c.mu.Lock()
	fs := c.cleanups
	c.cleanups = nil
	c.mu.Unlock()
	for _, f := range slices.Backward(fs) {
		f()
	}
}

// Case is a named cell to run.
type Case struct {
	Name string
	Run  func(c *C)
}

// concurrent bounds the cells that run at once in one package: enough
// that the matrix takes little more than its slowest cell, few enough
// that a 2-core machine keeps the bounds meaningful.
const concurrent = 8

// Run runs each case as a subtest of t, all at once. A case runs in a
// goroutine started before its subtest calls t.Parallel, and the subtest
// waits for it: go test runs only GOMAXPROCS parallel subtests at a time
// (2 on a 2-core machine), and a cell spends its time waiting on real
// time, so the cells run together and only their reports queue.
func Run(t *testing.T, cases []Case) {
	sem := make(chan struct{}, concurrent)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			c := &C{t: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				sem <- struct{}{}
				defer func() { <-sem }()
				defer c.cleanup()
				tc.Run(c)
			}()
			t.Parallel()
			<-done
		})
	}
}
