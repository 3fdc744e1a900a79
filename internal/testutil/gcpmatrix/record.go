package gcpmatrix

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
)

// Got records what one client was given of one type, through watches by
// name (Named) or a wildcard (it is an engine.WildcardWatcher), and wakes
// whoever waits for a state of it.
type Got struct {
	client, typeURL string
	want            []string
	wildcard        bool

	mu      sync.Mutex
	held    map[string]bool
	errs    map[string]error // the last error that took each resource away
	subErr  error            // the wildcard subscription's last error
	signals int              // OnAmbientError("", nil) calls
	// heldAtFirst is how many wanted resources were held at the first
	// signal; complete, that a signal came while every one was.
	heldAtFirst int
	complete    bool
	wake        chan struct{}
}

func newGot(client, typeURL string, want []string, wildcard bool) *Got {
	return &Got{client: client, typeURL: typeURL, want: want, wildcard: wildcard,
		held: map[string]bool{}, errs: map[string]error{}, wake: make(chan struct{})}
}

// OnResourceChanged records a resource given or taken away.
func (g *Got) OnResourceChanged(name string, r registry.Resource, err error, done func()) {
	defer done()
	g.mu.Lock()
	defer g.notifyLocked()
	if name == "" { // the wildcard itself failed, before any resource
		g.subErr = err
		return
	}
	if err != nil || r == nil {
		delete(g.held, name)
		g.errs[name] = err
		return
	}
	g.held[name] = true
}

// OnAmbientError records the wildcard's signals; an ambient error of a
// resource leaves it in use (gRFC A88) and changes nothing here.
func (g *Got) OnAmbientError(name string, err error, done func()) {
	defer done()
	if name != "" {
		return
	}
	g.mu.Lock()
	defer g.notifyLocked()
	if err != nil {
		g.subErr = err
		return
	}
	g.signals++
	n := g.countLocked()
	if g.signals == 1 {
		g.heldAtFirst = n
	}
	if n == len(g.want) {
		g.complete = true
	}
}

func (g *Got) notifyLocked() {
	close(g.wake)
	g.wake = make(chan struct{})
	g.mu.Unlock()
}

func (g *Got) countLocked() int {
	n := 0
	for _, name := range g.want {
		if g.held[name] {
			n++
		}
	}
	return n
}

// named is a watcher of one resource by name, recording into its Got.
type named struct {
	g    *Got
	name string
}

func (n named) OnResourceChanged(r registry.Resource, err error, done func()) {
	n.g.OnResourceChanged(n.name, r, err, done)
}

func (n named) OnAmbientError(_ error, done func()) { done() }

// Named returns the watcher of the resource called name.
func (g *Got) Named(name string) engine.ResourceWatcher { return named{g, name} }

// delivered says that every wanted resource is held and, for a wildcard,
// that a complete signal came while they were.
func (g *Got) delivered() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.countLocked() == len(g.want) && (!g.wildcard || g.complete)
}

// waitDelivered waits until delivered, or the deadline.
func (g *Got) waitDelivered(deadline time.Time) bool {
	for {
		g.mu.Lock()
		wake := g.wake
		g.mu.Unlock()
		if g.delivered() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		t := time.NewTimer(left)
		select {
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// String tells what the client holds and lacks, for failure messages.
func (g *Got) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var held, missing []string
	for _, name := range g.want {
		if g.held[name] {
			held = append(held, name)
		} else {
			missing = append(missing, name)
		}
	}
	how := "by name"
	if g.wildcard {
		how = "wildcard"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "client %s, %s %s: holds %d of %d %v", g.client, short(g.typeURL), how, len(held), len(g.want), held)
	if len(missing) > 0 {
		fmt.Fprintf(&b, ", missing %v", missing)
	}
	if g.wildcard {
		switch {
		case g.signals == 0:
			b.WriteString(`; no complete signal (OnAmbientError("", nil))`)
		case !g.complete:
			fmt.Fprintf(&b, "; %d complete signals, none while holding every resource (%d held at the first)", g.signals, g.heldAtFirst)
		}
		if g.subErr != nil {
			fmt.Fprintf(&b, "; subscription error %s", describe(g.subErr))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(g.errs)) {
		if !g.held[name] {
			fmt.Fprintf(&b, "; %s: %s", name, describe(g.errs[name]))
		}
	}
	return b.String()
}

// describe is an error's code and kind: its message ends with the node
// and server, which say nothing here.
func describe(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s %s", status.Code(err), engine.KindOf(err))
}
