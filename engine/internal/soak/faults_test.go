package soak_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/registry"
)

// faultKind is one kind of trouble the soak makes.
type faultKind int

const (
	// faultStop takes a management server down (its connections close,
	// new ones are refused) and brings it back.
	faultStop faultKind = iota
	// faultCut cuts the network path: the proxy drops every connection
	// and refuses new ones, while the server stays up.
	faultCut
	// faultPause stalls the path: connections stay open, nothing moves.
	faultPause
	// faultDelay adds latency to the path.
	faultDelay
	// faultInvalid publishes a resource the engine must NACK, then fixes
	// it.
	faultInvalid
	// faultTP3 replaces a resource by an xRFC TP3 error, then restores it.
	faultTP3
	// faultOversize publishes a response larger than MaxResponseBytes,
	// then shrinks it.
	faultOversize
	// faultDelete leaves a Listener or Cluster out of the state of the
	// world (a deletion, for these full-state types), then puts it back.
	faultDelete
	numFaultKinds
)

var faultNames = [numFaultKinds]string{"stop", "cut", "pause", "delay", "invalid", "tp3", "oversize", "delete"}

func (k faultKind) String() string { return faultNames[k] }

// parseFaultKinds reads a comma-separated list of fault kind names.
func parseFaultKinds(s string) (map[faultKind]bool, error) {
	out := make(map[faultKind]bool)
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.Index(faultNames[:], name)
		if i < 0 {
			return nil, fmt.Errorf("unknown fault kind %q (known: %s)", name, strings.Join(faultNames[:], ","))
		}
		out[faultKind(i)] = true
	}
	return out, nil
}

// activeFault is a fault in effect, undone at its end.
type activeFault struct {
	kind    faultKind
	servers []*server
	object  string // the resource or type a content fault is about
	end     time.Time
	undo    func()
}

func (f *activeFault) String() string {
	s := f.kind.String() + " " + serverNames(f.servers)
	if f.object != "" {
		s += " " + f.object
	}
	return s
}

// conflicts tells whether two faults would undo each other: the first to
// end would end the other too.
func (f *activeFault) conflicts(o *activeFault) bool {
	if f.kind != o.kind || f.object != o.object {
		return false
	}
	for _, s := range f.servers {
		if slices.Contains(o.servers, s) {
			return true
		}
	}
	return false
}

// injector starts faults at random, from a seeded generator, and undoes
// each after a random time. Which faults happen, in which order, on which
// server and resource, follows from the seed; when they happen relative
// to the engine's own timing does not, so a replay makes the same faults,
// not the same interleaving.
type injector struct {
	rng     *rand.Rand
	world   *world
	servers []*server
	kinds   []faultKind // the kinds enabled
	logf    func(format string, args ...any)

	mu     sync.Mutex // guards counts, for the report
	counts [numFaultKinds]int

	active []*activeFault
}

func (in *injector) count(k faultKind) {
	in.mu.Lock()
	in.counts[k]++
	in.mu.Unlock()
}

func (in *injector) report() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var parts []string
	total := 0
	for k, n := range in.counts {
		parts = append(parts, fmt.Sprintf("%s=%d", faultKind(k), n))
		total += n
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, " "))
}

// between returns a duration in [lo, hi).
func (in *injector) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(in.rng.Int64N(int64(hi-lo)))
}

// run injects faults until stop is closed, then undoes those in effect.
func (in *injector) run(stop <-chan struct{}) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	next := time.Now().Add(in.between(200*time.Millisecond, 600*time.Millisecond))
	for {
		select {
		case <-stop:
			for _, f := range in.active {
				in.logf("fault end (soak over): %s", f)
				f.undo()
			}
			in.active = nil
			return
		case <-tick.C:
		}
		now := time.Now()
		kept := in.active[:0]
		for _, f := range in.active {
			if now.Before(f.end) {
				kept = append(kept, f)
				continue
			}
			in.logf("fault end: %s", f)
			f.undo()
		}
		clear(in.active[len(kept):])
		in.active = kept
		if now.Before(next) {
			continue
		}
		next = now.Add(in.between(100*time.Millisecond, 900*time.Millisecond))
		in.start(now)
	}
}

// start picks one fault and starts it, unless the same one is in effect.
func (in *injector) start(now time.Time) {
	kind := in.kinds[in.rng.IntN(len(in.kinds))]
	// The primary matters most: it is where the engine wants to be.
	targets := []*server{in.servers[0]}
	switch r := in.rng.IntN(10); {
	case r >= 8:
		targets = in.servers // both
	case r >= 5:
		targets = []*server{in.servers[1]}
	}
	f := &activeFault{kind: kind, servers: targets}
	var do func()
	switch kind {
	case faultStop:
		f.end = now.Add(in.between(200*time.Millisecond, 3*time.Second))
		do, f.undo = func() {
			for _, s := range targets {
				s.cp.Stop()
			}
		}, func() {
			for _, s := range targets {
				s.cp.Restart()
			}
		}
	case faultCut:
		f.end = now.Add(in.between(100*time.Millisecond, 3*time.Second))
		do, f.undo = func() {
			for _, s := range targets {
				s.proxy.Cut()
			}
		}, func() {
			for _, s := range targets {
				s.proxy.Restore()
			}
		}
	case faultPause:
		f.end = now.Add(in.between(100*time.Millisecond, 2500*time.Millisecond))
		do, f.undo = func() {
			for _, s := range targets {
				s.proxy.Pause()
			}
		}, func() {
			for _, s := range targets {
				s.proxy.Resume()
			}
		}
	case faultDelay:
		f.end = now.Add(in.between(500*time.Millisecond, 4*time.Second))
		d := in.between(2*time.Millisecond, 80*time.Millisecond)
		do, f.undo = func() {
			for _, s := range targets {
				s.proxy.SetDelay(d)
			}
		}, func() {
			for _, s := range targets {
				s.proxy.SetDelay(0)
			}
		}
	case faultInvalid:
		f.end = now.Add(in.between(300*time.Millisecond, 3*time.Second))
		k := in.rng.IntN(numKinds)
		refs := []registry.Ref{in.pickRef(k)}
		f.object = refs[0].Name
		if in.rng.IntN(4) == 0 {
			// Every resource of the kind: the response has no valid
			// resource, so its version is not accepted either.
			refs = refs[:0]
			for _, n := range names(k) {
				refs = append(refs, registry.Ref{TypeURL: typeURLs[k], Name: n})
			}
			f.object = "every " + kindNames[k]
		}
		do, f.undo = in.contentFault(targets, k, func(s *server) {
			for _, ref := range refs {
				s.faults.invalid[ref] = true
			}
		}, func(s *server) {
			for _, ref := range refs {
				delete(s.faults.invalid, ref)
			}
		})
	case faultTP3:
		f.end = now.Add(in.between(300*time.Millisecond, 3*time.Second))
		k := in.rng.IntN(numKinds)
		ref := in.pickRef(k)
		code := []codes.Code{codes.NotFound, codes.PermissionDenied, codes.Unavailable, codes.Internal}[in.rng.IntN(4)]
		st := &rpcstatus.Status{Code: int32(code), Message: "soak: " + code.String()}
		f.object = ref.Name
		do, f.undo = func() {
			in.world.mu.Lock()
			defer in.world.mu.Unlock()
			for _, s := range targets {
				s.tp3Locked(ref, st)
			}
		}, func() {
			in.world.mu.Lock()
			defer in.world.mu.Unlock()
			for _, s := range targets {
				s.tp3Locked(ref, nil)
			}
		}
	case faultOversize:
		f.end = now.Add(in.between(300*time.Millisecond, 3*time.Second))
		// The kinds build knows how to pad.
		k := []int{kindLDS, kindCDS, kindLEDS}[in.rng.IntN(3)]
		f.object = kindNames[k]
		do, f.undo = in.contentFault(targets, k, func(s *server) { s.faults.oversize[k] = true },
			func(s *server) { delete(s.faults.oversize, k) })
	case faultDelete:
		f.end = now.Add(in.between(300*time.Millisecond, 3*time.Second))
		// Only full-state types can say a resource is gone.
		k := []int{kindLDS, kindCDS}[in.rng.IntN(2)]
		ref := in.pickRef(k)
		f.object = ref.Name
		do, f.undo = in.contentFault(targets, k, func(s *server) { s.faults.deleted[ref] = true },
			func(s *server) { delete(s.faults.deleted, ref) })
	}
	for _, a := range in.active {
		if a.conflicts(f) {
			return
		}
	}
	in.logf("fault start: %s for %v", f, f.end.Sub(now).Round(time.Millisecond))
	in.count(kind)
	do()
	in.active = append(in.active, f)
}

// contentFault returns the start and end of a fault that changes what the
// targets publish of kind k: set and unset change a server's faults, and
// each is published at once.
func (in *injector) contentFault(targets []*server, k int, set, unset func(*server)) (do, undo func()) {
	apply := func(change func(*server)) func() {
		return func() {
			in.world.mu.Lock()
			defer in.world.mu.Unlock()
			for _, s := range targets {
				change(s)
				in.world.updateLocked(s, k)
			}
		}
	}
	return apply(set), apply(unset)
}

// pickRef picks a resource of kind k: any of them, so that graph-only
// clusters (watched or not at the time) get faults too.
func (in *injector) pickRef(k int) registry.Ref {
	ns := names(k)
	return registry.Ref{TypeURL: typeURLs[k], Name: ns[in.rng.IntN(len(ns))]}
}

func serverNames(ss []*server) string {
	if len(ss) > 1 {
		return "both"
	}
	return ss[0].name
}

// tp3Locked replaces ref by st on s, or restores it when st is nil.
func (s *server) tp3Locked(ref registry.Ref, st *rpcstatus.Status) {
	k := kindOf(ref.TypeURL)
	if st == nil {
		delete(s.tp3[k], ref.Name)
	} else {
		if s.tp3[k] == nil {
			s.tp3[k] = make(map[string]*rpcstatus.Status)
		}
		s.tp3[k][ref.Name] = st
	}
	s.cp.SetResourceErrors(ref.TypeURL, maps.Clone(s.tp3[k]))
	s.versions[k] = s.cp.Version()
}
