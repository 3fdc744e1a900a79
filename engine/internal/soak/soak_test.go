package soak_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/graph"
	"github.com/xdsengine/xdsengine/internal/testutil/tcpproxy"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Environment variables of the soak.
const (
	// envDuration sets how long faults are injected, as a Go duration
	// ("30m"): the long mode. Unset, the CI mode runs for ciDuration
	// (shortDuration with -short).
	envDuration = "XDSENGINE_SOAK"
	// envSeed replays a run's faults: the seed every run prints.
	envSeed = "XDSENGINE_SOAK_SEED"
	// envFaults limits the fault kinds, as a comma-separated list of
	// names (stop,cut,pause,delay,invalid,tp3,oversize,delete); default
	// all.
	envFaults = "XDSENGINE_SOAK_FAULTS"
	// envVerbose, when "1", logs every fault and the engine's logs as
	// they happen (seen live with go test -v).
	envVerbose = "XDSENGINE_SOAK_VERBOSE"
)

const (
	ciDuration    = 50 * time.Second
	shortDuration = 10 * time.Second
	// convergeBound is how long the engine may take, once every fault
	// is over and the final state is published, to deliver it to every
	// watcher. It takes well under a second; the bound leaves room for
	// a loaded CI machine running the race detector.
	convergeBound = 30 * time.Second
	// heapBound bounds the heap in use after a GC, sampled during the
	// run and at its end. The soak's own state is small and fixed; what
	// could grow is the engine's (and the embedded servers', which keep
	// only counts here).
	heapBound = 128 << 20
	// heapGrowthBound bounds how much the heap may grow from the start
	// to the end of the run, both measured in a steady state (every
	// watcher caught up, no fault, nothing being published): a leak that
	// grows with the number of updates, faults or watches shows there,
	// in the long mode most of all. The steady heap is about 6 MiB.
	heapGrowthBound = 16 << 20
)

type soakConfig struct {
	duration time.Duration
	long     bool
	seed     uint64
	kinds    []faultKind
	verbose  bool
}

// roundLength is the length of one round of faults: three rounds in the
// CI mode, a round every two minutes in the long mode.
func (c soakConfig) roundLength() time.Duration {
	if c.long {
		return min(2*time.Minute, c.duration)
	}
	return (c.duration + 2) / 3
}

func configFromEnv(t *testing.T) soakConfig {
	t.Helper()
	cfg := soakConfig{duration: ciDuration, verbose: os.Getenv(envVerbose) == "1"}
	if testing.Short() {
		cfg.duration = shortDuration
	}
	if v := os.Getenv(envDuration); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 30m", envDuration, v)
		}
		cfg.duration, cfg.long = d, true
	}
	cfg.seed = uint64(time.Now().UnixNano())
	if v := os.Getenv(envSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", envSeed, v)
		}
		cfg.seed = s
	}
	enabled := map[faultKind]bool{}
	for k := range numFaultKinds {
		enabled[k] = true
	}
	if v := os.Getenv(envFaults); v != "" {
		var err error
		if enabled, err = parseFaultKinds(v); err != nil {
			t.Fatalf("%s: %v", envFaults, err)
		}
	}
	for k := range numFaultKinds {
		if enabled[k] {
			cfg.kinds = append(cfg.kinds, k)
		}
	}
	if len(cfg.kinds) == 0 {
		t.Fatalf("%s=%q enables no fault kind", envFaults, os.Getenv(envFaults))
	}
	if dl, ok := t.Deadline(); ok {
		if need := cfg.duration + 2*convergeBound; time.Until(dl) < need {
			t.Fatalf("a soak of %v needs about %v; run go test with a larger -timeout", cfg.duration, need)
		}
	}
	return cfg
}

// TestSoak runs an engine against a primary and a fallback management
// server through faults of every kind while the resources change all the
// time, then ends the faults, publishes a final state and checks that
// every watcher ends with it, that the engine is back on the primary,
// and that nothing leaked. Throughout, it checks the watcher contract.
func TestSoak(t *testing.T) {
	cfg := configFromEnv(t)
	t.Logf("seed %d (replay with %s=%d), faults %v for %v", cfg.seed, envSeed, cfg.seed, cfg.kinds, cfg.duration)

	runtime.GC()
	baseGoroutines := runtime.NumGoroutine()
	start := time.Now()

	h := newHarness(t, cfg)
	defer h.closeAll() // on failure too; idempotent

	// Everything resolves before the first fault, so that the soak
	// starts from a healthy, fully cached engine.
	h.waitConverged(t, "start")
	t.Logf("initial state delivered in %v", time.Since(start).Round(time.Millisecond))
	h.sampleSteadyHeap()

	// Faults in rounds. After each round, with every fault undone and
	// nothing new published, the engine must catch up on its own with
	// what the primary has now: an update lost during the faults shows
	// here, where the final state (a new version of everything) would
	// hide it.
	driveRNG := rand.New(rand.NewPCG(cfg.seed, 1))
	churnRNG := rand.New(rand.NewPCG(cfg.seed, 3))
	var faultTime time.Duration
	var quiesce []time.Duration
	for round := 1; faultTime < cfg.duration; round++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { h.drive(stop, driveRNG) })
		wg.Go(func() { h.inj.run(stop) })
		wg.Go(func() { h.churn(stop, churnRNG) })
		wg.Go(func() { h.sample(t, stop) })
		d := min(cfg.roundLength(), cfg.duration-faultTime)
		time.Sleep(d)
		close(stop)
		wg.Wait()
		faultTime += d
		if v := h.checker.violationList(); len(v) > 0 {
			h.dumpRecent(t)
			t.Fatalf("watcher contract violated during the faults:\n%s", strings.Join(v, "\n"))
		}
		at := time.Now()
		h.waitConverged(t, fmt.Sprintf("after fault round %d", round))
		quiesce = append(quiesce, time.Since(at))
		h.sampleSteadyHeap()
	}

	// Every fault was undone by the injector; the final state goes to
	// both servers, and the engine must deliver it.
	h.world.mu.Lock()
	h.world.final = true
	for k := range numKinds {
		h.world.gens[k]++
	}
	for _, s := range h.servers {
		h.world.setLocked(s)
	}
	h.world.mu.Unlock()
	finalAt := time.Now()
	h.waitConverged(t, "end")
	converge := time.Since(finalAt)

	h.sampleSteadyHeap() // the last sample, with the run's state still in place
	h.report(t, faultTime, quiesce, converge)

	h.closeAll()
	h.checker.heldDones.Wait()
	if v := h.checker.violationList(); len(v) > 0 {
		t.Fatalf("watcher contract violated:\n%s", strings.Join(v, "\n"))
	}
	h.checkGoroutines(t, baseGoroutines)
	h.checkHeap(t)
	t.Logf("total wall time %v", time.Since(start).Round(time.Millisecond))
}

// harness is everything one soak run holds.
type harness struct {
	t       *testing.T
	cfg     soakConfig
	servers []*server // primary, fallback
	world   *world
	inj     *injector
	eng     *engine.Engine
	reg     *registry.Registry
	logs    *logCounter
	checker *checker

	mu      sync.Mutex // guards the watch lists, replaced by churn
	watches []*resWatch
	graphs  []*graphWatch
	// replaced counts replaced watches, [0] from the churn's goroutine,
	// [1] inside a callback; replacedGraphs likewise.
	replaced, replacedGraphs [2]atomic.Int64
	resets                   atomic.Int64 // resetAll calls

	started time.Time

	heapMu       sync.Mutex
	lastProgress time.Time // of the last progress line in the long mode
	heapSamples  []uint64  // HeapInuse after GC, during the faults
	steadyHeap   []uint64  // HeapInuse after GC, each time the engine caught up
	goroutines   int       // the most seen during the run

	closeOnce sync.Once
}

func newHarness(t *testing.T, cfg soakConfig) *harness {
	h := &harness{
		t:       t,
		cfg:     cfg,
		started: time.Now(),
		// The first progress line comes five minutes in.
		lastProgress: time.Now(),
		reg:          builtin.Registry(),
		checker:      newChecker(),
		world:        &world{published: make(map[*server]int)},
	}
	h.logs = newLogCounter(cfg.verbose, t.Logf)
	for _, s := range []struct {
		name string
		tag  int
	}{{"primary", tagPrimary}, {"fallback", tagFallback}} {
		cp, err := xdstest.Start(xdstest.Options{Name: s.name, CountOnly: true, Logf: h.logs.eventf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cp.Close)
		h.servers = append(h.servers, &server{
			name:   s.name,
			tag:    s.tag,
			cp:     cp,
			proxy:  tcpproxy.Start(t, cp.Addr()),
			faults: contentFaults{invalid: make(map[registry.Ref]bool), oversize: make(map[int]bool), deleted: make(map[registry.Ref]bool)},
		})
	}
	h.world.mu.Lock()
	for _, s := range h.servers {
		h.world.setLocked(s)
	}
	h.world.mu.Unlock()
	h.inj = &injector{
		rng:     rand.New(rand.NewPCG(cfg.seed, 2)),
		world:   h.world,
		servers: h.servers,
		kinds:   cfg.kinds,
		logf:    h.logs.eventf,
	}

	// The fallback drops cached resources on data errors and makes its
	// does-not-exist timer a transient error (A88), so that those paths
	// run too; the primary keeps A88's defaults.
	servers := []bootstrap.ServerConfig{
		bootstrap.InsecureServer(h.servers[0].proxy.Addr()),
		bootstrap.InsecureServer(h.servers[1].proxy.Addr(), features.NameFailOnDataErrors, features.NameResourceTimerIsTransientError),
	}
	h.checker.dropServer = servers[1].URI
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers: servers,
			Node:    bootstrap.Node{ID: "soak"},
			Authorities: map[string]bootstrap.Authority{
				ledsAuthority: {Servers: servers, FallbackOnReachabilityOnly: true},
			},
		},
		Registry: h.reg,
		// Short reconnect delays, in gRPC's channel and the engine's
		// stream retries alike, so that the soak sees many outages and
		// recoveries rather than waiting out backoffs.
		Transport: transport.GRPC(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond},
			MinConnectTimeout: time.Second,
		})),
		Backoff: func(n int) time.Duration {
			return min(20*time.Millisecond<<min(n, 5), 500*time.Millisecond)
		},
		// Small enough that a padded response is cheap to make.
		MaxResponseBytes: maxResponseBytes,
		// Short enough that stalls and TP3 faults on new subscriptions
		// run into the does-not-exist timer now and then.
		ResourceTimeout: 2 * time.Second,
		Logger:          slog.New(&countingHandler{lc: h.logs}),
		// Every switch on, whatever the environment says.
		Switches: &features.Switches{},
		Target:   "xds:///soak",
	})
	if err != nil {
		t.Fatal(err)
	}
	h.eng = e

	for k := range numKinds {
		for idx, name := range names(k) {
			if k >= kindCDS && idx >= watchedClusters {
				continue // reached through the graphs only
			}
			w := &resWatch{ref: registry.Ref{TypeURL: typeURLs[k], Name: name}, c: h.checker}
			w.start(e)
			h.watches = append(h.watches, w)
		}
	}
	for i := range numListeners {
		g := &graphWatch{root: registry.Ref{TypeURL: lds.TypeURL, Name: listenerName(i)}, c: h.checker}
		h.startGraph(g)
		h.graphs = append(h.graphs, g)
	}
	return h
}

func (h *harness) startGraph(g *graphWatch) {
	cancel := graph.Watch(h.eng, g.root, g)
	g.mu.Lock()
	g.cancel = cancel
	g.mu.Unlock()
}

// closeAll cancels every watch, closes the engine, then the proxies and
// servers. It runs once.
func (h *harness) closeAll() {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		watches, graphs := h.watches, h.graphs
		h.mu.Unlock()
		for _, g := range graphs {
			g.stop()
		}
		for _, w := range watches {
			w.stop()
		}
		if err := h.eng.Close(); err != nil {
			h.t.Errorf("Close: %v", err)
		}
		h.checker.closed.Store(true)
		for _, s := range h.servers {
			s.proxy.Close()
			s.cp.Close()
		}
	})
}

// drive publishes new versions on both servers until stop: mostly one
// type at a time, now and then everything at once.
func (h *harness) drive(stop <-chan struct{}, rng *rand.Rand) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(20*time.Millisecond + time.Duration(rng.Int64N(int64(130*time.Millisecond)))):
		}
		h.world.mu.Lock()
		if rng.IntN(5) == 0 {
			for k := range numKinds {
				h.world.gens[k]++
			}
			for _, s := range h.servers {
				h.world.setLocked(s)
			}
		} else {
			k := rng.IntN(numKinds)
			h.world.gens[k]++
			for _, s := range h.servers {
				h.world.updateLocked(s, k)
			}
		}
		h.world.mu.Unlock()
	}
}

// churn replaces watches until stop: a watcher is cancelled and a new
// one started for the same resource, which must get the cached resource
// at once (or the same error), and the engine must not keep anything of
// the old one. The cancel and the new watch happen from another goroutine
// or, a third of the time, inside the old watcher's next callback, which
// the engine allows. Now and then every watch is replaced at once.
func (h *harness) churn(stop <-chan struct{}, rng *rand.Rand) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(100*time.Millisecond + time.Duration(rng.Int64N(int64(600*time.Millisecond)))):
		}
		if rng.IntN(40) == 0 {
			h.resetAll(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
			continue
		}
		inside := rng.IntN(3) == 0
		h.mu.Lock()
		if rng.IntN(8) == 0 {
			old := h.graphs[rng.IntN(len(h.graphs))]
			h.mu.Unlock()
			if inside {
				f := func(g *graphWatch) { h.replaceGraph(g, true) }
				old.replace.CompareAndSwap(nil, &f)
			} else if old.replace.Load() == nil {
				h.replaceGraph(old, false)
			}
			continue
		}
		old := h.watches[rng.IntN(len(h.watches))]
		h.mu.Unlock()
		if inside {
			f := h.replaceWatch
			old.replace.CompareAndSwap(nil, &f)
			continue
		}
		if old.replace.Load() != nil {
			continue // it will replace itself
		}
		// Half the time the new watch starts before the old one ends,
		// so the entry stays subscribed; else after, so it may be
		// unsubscribed and subscribed again.
		w := &resWatch{ref: old.ref, c: h.checker}
		if !h.swapWatch(old, w) {
			continue
		}
		h.replaced[0].Add(1)
		if rng.IntN(2) == 0 {
			w.start(h.eng)
			old.stop()
		} else {
			old.stop()
			w.start(h.eng)
		}
	}
}

// resetAll cancels every watch and graph and, after pause, starts them
// anew. With nothing watched, the engine gives up its channels (and their
// gRPC connections); the new watches make new ones, on servers that may
// be down at the time.
func (h *harness) resetAll(pause time.Duration) {
	h.mu.Lock()
	oldW, oldG := h.watches, h.graphs
	h.watches, h.graphs = nil, nil
	for _, w := range oldW {
		h.watches = append(h.watches, &resWatch{ref: w.ref, c: h.checker})
	}
	for _, g := range oldG {
		h.graphs = append(h.graphs, &graphWatch{root: g.root, c: h.checker})
	}
	newW, newG := h.watches, h.graphs
	h.mu.Unlock()
	h.resets.Add(1)
	for _, g := range oldG {
		g.stop()
	}
	for _, w := range oldW {
		w.stop()
	}
	time.Sleep(pause)
	for _, w := range newW {
		w.start(h.eng)
	}
	for _, g := range newG {
		h.startGraph(g)
	}
}

// swapWatch puts w in old's place in the list, unless old left it.
func (h *harness) swapWatch(old, w *resWatch) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.Index(h.watches, old)
	if i < 0 {
		return false
	}
	h.watches[i] = w
	return true
}

// replaceWatch, run inside old's callback, cancels old, marks it stopped
// (no callback may follow) and starts a watcher in its place.
func (h *harness) replaceWatch(old *resWatch) {
	w := &resWatch{ref: old.ref, c: h.checker}
	if !h.swapWatch(old, w) {
		return
	}
	h.replaced[1].Add(1)
	old.stop()
	old.stopped.Store(true)
	w.start(h.eng)
}

// replaceGraph cancels old and starts a graph watch in its place; inside
// tells that it runs inside old's callback, as replaceWatch does.
func (h *harness) replaceGraph(old *graphWatch, inside bool) {
	g := &graphWatch{root: old.root, c: h.checker}
	h.mu.Lock()
	i := slices.Index(h.graphs, old)
	if i >= 0 {
		h.graphs[i] = g
	}
	h.mu.Unlock()
	if i < 0 {
		return
	}
	old.stop()
	if inside {
		old.stopped.Store(true)
		h.replacedGraphs[1].Add(1)
	} else {
		h.replacedGraphs[0].Add(1)
	}
	h.startGraph(g)
}

// sample records the heap and the goroutine count now and then until
// stop, and in the long mode logs the progress every five minutes.
func (h *harness) sample(t *testing.T, stop <-chan struct{}) {
	// About twenty samples a run, at most one every 30 s.
	every := min(max(h.cfg.duration/20, time.Second), 30*time.Second)
	for {
		select {
		case <-stop:
			return
		case <-time.After(every):
		}
		h.sampleHeap()
		h.heapMu.Lock()
		h.goroutines = max(h.goroutines, runtime.NumGoroutine())
		progress := h.cfg.long && time.Since(h.lastProgress) >= 5*time.Minute
		if progress {
			h.lastProgress = time.Now()
		}
		h.heapMu.Unlock()
		if progress {
			// Seen as it happens with go test -v.
			t.Logf("%v: faults %s; heap (MiB) %s; engine: %s", time.Since(h.started).Round(time.Second),
				h.inj.report(), h.heapSummary(), h.logs.summary())
		}
	}
}

func (h *harness) sampleHeap() {
	b := heapInUse()
	h.heapMu.Lock()
	h.heapSamples = append(h.heapSamples, b)
	h.heapMu.Unlock()
}

func (h *harness) sampleSteadyHeap() {
	b := heapInUse()
	h.heapMu.Lock()
	h.steadyHeap = append(h.steadyHeap, b)
	h.heapMu.Unlock()
}

// heapInUse returns the heap in use after a GC.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func (h *harness) heapSummary() string {
	h.heapMu.Lock()
	defer h.heapMu.Unlock()
	mib := func(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }
	out := "during faults: none"
	if ss := h.heapSamples; len(ss) > 0 {
		out = fmt.Sprintf("during faults: min %s, max %s (%d samples)", mib(slices.Min(ss)), mib(slices.Max(ss)), len(ss))
	}
	var steady []string
	for _, b := range h.steadyHeap {
		steady = append(steady, mib(b))
	}
	return out + "; caught up: " + strings.Join(steady, ", ")
}

// waitConverged waits until every watcher, every graph and the engine's
// cache hold the state of the world, the engine is on the primary and
// off the fallback, and fails the test with what is still off if that
// takes longer than convergeBound.
func (h *harness) waitConverged(t *testing.T, when string) {
	t.Helper()
	want := h.world.expected()
	reach := make([][]registry.Ref, numListeners)
	for i := range numListeners {
		reach[i] = h.world.reachable(i)
	}
	deadline := time.Now().Add(convergeBound)
	var problems []string
	for {
		problems = h.problems(want, reach)
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.dumpRecent(t)
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
	}
	t.Fatalf("%s: not converged %v after the state was published:\n%s", when, convergeBound, strings.Join(problems, "\n"))
}

// problems lists what differs from the expected state.
func (h *harness) problems(want map[registry.Ref]proto.Message, reach [][]registry.Ref) []string {
	var out []string
	h.mu.Lock()
	watches, graphs := slices.Clone(h.watches), slices.Clone(h.graphs)
	h.mu.Unlock()
	for _, w := range watches {
		if ok, why := w.converged(want[w.ref]); !ok {
			out = append(out, why)
		}
	}
	for i, g := range graphs {
		if ok, why := g.converged(reach[i], want); !ok {
			out = append(out, why)
		}
	}
	// The cache: every resource ACKED from the primary, at the version
	// of the primary's last publication of its type, with no error kept.
	for _, g := range h.eng.Dump().GetGenericXdsConfigs() {
		k := kindOf(g.GetTypeUrl())
		version := h.world.version(h.servers[0], k)
		if g.GetClientStatus() != adminpb.ClientResourceStatus_ACKED || g.GetErrorState() != nil || g.GetVersionInfo() != version {
			out = append(out, fmt.Sprintf("CSDS %s %s: %s version %q (primary's is %q), error %v", kindNames[k],
				g.GetName(), g.GetClientStatus(), g.GetVersionInfo(), version, g.GetErrorState().GetDetails()))
		}
	}
	// A71: the primary's first response ends the fallback.
	if n := h.servers[1].cp.OpenStreams(); n != 0 {
		out = append(out, fmt.Sprintf("the fallback server still has %d open streams", n))
	}
	return out
}

// report logs what the run did.
func (h *harness) report(t *testing.T, faultTime time.Duration, quiesce []time.Duration, converge time.Duration) {
	p, f := h.servers[0].cp.Counts(), h.servers[1].cp.Counts()
	h.world.mu.Lock()
	published := fmt.Sprintf("primary %d, fallback %d (Set/Update calls; generations per type %v)",
		h.world.published[h.servers[0]], h.world.published[h.servers[1]], h.world.gens)
	h.world.mu.Unlock()
	h.mu.Lock()
	nw, ng := len(h.watches), len(h.graphs)
	h.mu.Unlock()
	lc := h.logs.snapshot()
	var rounds []string
	for _, d := range quiesce {
		rounds = append(rounds, d.Round(time.Millisecond).String())
	}
	t.Logf("faults for %v in %d rounds, seed %d; caught up after each round in %s; final state converged in %v",
		faultTime.Round(time.Millisecond), len(quiesce), h.cfg.seed, strings.Join(rounds, ", "), converge.Round(time.Millisecond))
	t.Logf("faults injected: %s", h.inj.report())
	t.Logf("updates published: %s", published)
	t.Logf("updates delivered: %d resources to %d resource watchers, %d graphs to %d graph watchers",
		h.checker.resources.Load(), nw, h.checker.graphs.Load(), ng)
	t.Logf("watches replaced: %d resource watches (%d inside a callback), %d graph watches (%d inside a callback); all replaced at once %d times",
		h.replaced[0].Load()+h.replaced[1].Load(), h.replaced[1].Load(), h.replacedGraphs[0].Load()+h.replacedGraphs[1].Load(), h.replacedGraphs[1].Load(),
		h.resets.Load())
	t.Logf("reconnects: streams opened: primary %d, fallback %d; engine: %d stream restarts after responses, %d server failures",
		p.StreamsOpened, f.StreamsOpened, lc["xDS stream closed after responses; reconnecting"], lc["xDS server unreachable"])
	t.Logf("fallbacks: %d (engine log \"xDS fallback\"), %d returns to the primary (\"xDS fallback ended: primary is back\"); fallback server streams %d",
		lc["xDS fallback"], lc["xDS fallback ended: primary is back"], f.StreamsOpened)
	t.Logf("NACKs seen by the servers: primary %d, fallback %d (engine log \"xDS response NACKed\": %d); TP3 errors sent: primary %d, fallback %d",
		p.NACKs, f.NACKs, lc["xDS response NACKed"], p.ResourceErrors, f.ResourceErrors)
	t.Logf("responses: primary %d, fallback %d; requests: primary %d, fallback %d", p.Responses, f.Responses, p.Requests, f.Requests)
	t.Logf("errors seen by watchers (kind code=count): %s; resources in use taken back by the fallback's fail_on_data_errors: %d",
		h.checker.errorCounts(), h.checker.drops.Load())
	t.Logf("engine logs at INFO and above: %s", h.logs.summary())
	t.Logf("heap in use after GC (MiB): %s; most goroutines seen %d", h.heapSummary(), h.goroutines)
}

// checkGoroutines waits for the goroutine count to come back to what it
// was before the soak started.
func (h *harness) checkGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			t.Logf("goroutines: %d before, %d after Close", base, n)
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines after Close, %d before the soak:\n%s", n, base, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *harness) checkHeap(t *testing.T) {
	t.Helper()
	h.heapMu.Lock()
	all := append(slices.Clone(h.heapSamples), h.steadyHeap...)
	steady := slices.Clone(h.steadyHeap)
	h.heapMu.Unlock()
	if m := slices.Max(all); m > heapBound {
		t.Errorf("heap in use reached %d MiB after GC, bound %d MiB", m>>20, heapBound>>20)
	}
	if first, last := steady[0], steady[len(steady)-1]; last > first && last-first > heapGrowthBound {
		t.Errorf("heap in use, caught up, grew by %.1f MiB during the run (from %.1f to %.1f MiB), bound %d MiB",
			float64(last-first)/(1<<20), float64(first)/(1<<20), float64(last)/(1<<20), heapGrowthBound>>20)
	}
}

func (h *harness) dumpRecent(t *testing.T) {
	t.Helper()
	t.Logf("recent events (faults and engine logs, oldest first):\n%s", strings.Join(h.logs.recentLines(), "\n"))
}

// logCounter counts the engine's log messages and keeps the last lines,
// with the soak's own events, for failure reports.
type logCounter struct {
	stream func(format string, args ...any) // non-nil when verbose

	mu     sync.Mutex
	counts map[string]int
	recent []string // a ring of the last lines
	next   int
}

const recentLines = 300

func newLogCounter(verbose bool, logf func(format string, args ...any)) *logCounter {
	lc := &logCounter{counts: make(map[string]int), recent: make([]string, 0, recentLines)}
	if verbose {
		lc.stream = logf
	}
	return lc
}

func (lc *logCounter) add(line string) {
	lc.mu.Lock()
	if len(lc.recent) < recentLines {
		lc.recent = append(lc.recent, line)
	} else {
		lc.recent[lc.next] = line
		lc.next = (lc.next + 1) % recentLines
	}
	lc.mu.Unlock()
	if lc.stream != nil {
		lc.stream("%s", line)
	}
}

// eventf records an event of the soak itself.
func (lc *logCounter) eventf(format string, args ...any) {
	lc.add(time.Now().Format("15:04:05.000") + " soak: " + fmt.Sprintf(format, args...))
}

func (lc *logCounter) recentLines() []string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return append(slices.Clone(lc.recent[lc.next:]), lc.recent[:lc.next]...)
}

func (lc *logCounter) snapshot() map[string]int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	out := make(map[string]int, len(lc.counts))
	for k, v := range lc.counts {
		out[k] = v
	}
	return out
}

func (lc *logCounter) summary() string {
	counts := lc.snapshot()
	var parts []string
	for k, v := range counts {
		parts = append(parts, fmt.Sprintf("%q=%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// countingHandler is the engine's slog.Handler: it counts messages and
// keeps recent lines.
type countingHandler struct {
	lc    *logCounter
	attrs []slog.Attr
}

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Time.Format("15:04:05.000") + " " + r.Level.String() + " " + r.Message)
	attr := func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		attr(a)
	}
	r.Attrs(attr)
	h.lc.mu.Lock()
	h.lc.counts[r.Message]++
	h.lc.mu.Unlock()
	h.lc.add(b.String())
	return nil
}

func (h *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{lc: h.lc, attrs: append(slices.Clone(h.attrs), as...)}
}

// WithGroup keeps the attributes flat: the lines are for people.
func (h *countingHandler) WithGroup(string) slog.Handler { return h }

func (c *checker) violationList() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}
