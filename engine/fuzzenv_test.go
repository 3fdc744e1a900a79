package engine_test

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/fakeclock"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// The fuzz targets of this package that drive the response path share
// fuzzEnv: an engine on a scripted ADS server that watches, for each test
// type, three cached resources ("a", "b" and an xdstp name) and one that
// is not cached ("c"). Starting a server and an engine and caching the
// resources takes tens of milliseconds, far more than one input, so one
// env serves every input of a fuzz worker (and of a seed-corpus run);
// reset puts it back into its known state after each input, and an env
// whose input failed is thrown away, so that a broken engine does not fail
// the inputs after it (which would also defeat the fuzzer's minimization).

const (
	fuzzAuthority = "auth.example"
	// fuzzWait bounds every wait of an input: an engine that stops
	// answering is reported as a failure of that input (a deadlock),
	// not left to the global test timeout.
	fuzzWait = 10 * time.Second
	// fuzzMaxRequest bounds a request's size once the nonce and version,
	// which the protocol makes the client echo whatever their size, are
	// left out: in practice it bounds the NACK's error_detail.
	fuzzMaxRequest = 128 << 10
)

// fuzzXDSTPName is the xdstp name watched for typeURL, in canonical form;
// fuzzXDSTPWatched is the spelling the watch uses (context params out of
// order), so that the engine's canonicalization is on the path.
func fuzzXDSTPName(typeURL string) string {
	return "xdstp://" + fuzzAuthority + "/" + strings.TrimPrefix(typeURL, "type.googleapis.com/") + "/x?a=1&b=2"
}

func fuzzXDSTPWatched(typeURL string) string {
	return "xdstp://" + fuzzAuthority + "/" + strings.TrimPrefix(typeURL, "type.googleapis.com/") + "/x?b=2&a=1"
}

// fuzzCached are the names reset leaves cached (ACKED), fuzzUncached the
// one it leaves without a resource (RECEIVED_ERROR: reset sends a TP3
// NOT_FOUND for it, so a resource an input cached is dropped again).
func fuzzCached(typeURL string) []string { return []string{"a", "b", fuzzXDSTPName(typeURL)} }

const fuzzUncached = "c"

// fuzzSentinel is a thing resource every reset and probe changes: its
// watcher's callback for that change comes after every callback caused by
// what was sent before (callbacks are serialized, in order), which makes
// it a barrier.
const fuzzSentinel = "sentinel"

type watchKey struct{ typeURL, name string }

type fuzzEnv struct {
	srv      *scriptedads.Server
	st       *scriptedads.Stream
	eng      *engine.Engine
	errLogs  *errorLogs
	watchers map[watchKey]*watchrec.Recorder
	sentinel *watchrec.Recorder
	round    int
	cleanups []func()
	// lastVersion is the version reset sent for each type: the version a
	// NACK of an all-invalid response repeats.
	lastVersion map[string]string
}

// envTB gives scriptedads.Start the current input's T, for its failures,
// but keeps its cleanup for the env, which outlives the input.
type envTB struct {
	*testing.T
	env *fuzzEnv
}

func (tb envTB) Cleanup(f func()) { tb.env.cleanups = append(tb.env.cleanups, f) }

// fuzzEnvHolder keeps one fuzzEnv across the inputs of a fuzz target.
type fuzzEnvHolder struct{ env *fuzzEnv }

// newFuzzEnvHolder returns a holder whose env is closed when the fuzz
// target ends, so that the package's goleak check finds nothing running.
func newFuzzEnvHolder(f *testing.F) *fuzzEnvHolder {
	h := &fuzzEnvHolder{}
	f.Cleanup(func() {
		if h.env != nil {
			h.env.close()
			h.env = nil
		}
	})
	return h
}

// run calls fn with the env, starting one if there is none, and throws the
// env away if the input failed.
func (h *fuzzEnvHolder) run(t *testing.T, fn func(env *fuzzEnv)) {
	defer func() {
		if t.Failed() && h.env != nil {
			h.env.close()
			h.env = nil
		}
	}()
	if h.env == nil {
		h.env = &fuzzEnv{}
		h.env.start(t)
	}
	fn(h.env)
}

func (env *fuzzEnv) start(t *testing.T) {
	env.errLogs = &errorLogs{}
	env.watchers = make(map[watchKey]*watchrec.Recorder)
	env.lastVersion = make(map[string]string)
	env.srv = scriptedads.Start(envTB{t, env})
	sw := features.Switches{}
	// fail_on_data_errors: a data error drops a cached resource, so that
	// a response wrongly treated as a deletion shows in Dump as a lost
	// resource, not only as a state.
	server := bootstrap.InsecureServer(env.srv.Addr(), features.NameFailOnDataErrors)
	cfg := engine.Config{
		Bootstrap: &bootstrap.Bootstrap{
			Servers:     []bootstrap.ServerConfig{server},
			Node:        bootstrap.Node{ID: nodeID},
			Authorities: map[string]bootstrap.Authority{fuzzAuthority: {}},
		},
		Registry: testtype.Registry(),
		// Never advanced: no does-not-exist timer or backoff runs, so
		// whatever happens follows from the input alone.
		Clock:    fakeclock.New(time.Unix(1_700_000_000, 0)),
		Switches: &sw,
		Backoff:  func(n int) time.Duration { return time.Duration(n+1) * time.Second },
		Logger:   slog.New(env.errLogs),
	}
	cfg.Transport = transport.GRPC(grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
		MinConnectTimeout: time.Second,
	}))
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	env.eng = eng

	watch := func(typeURL, name, key string) *watchrec.Recorder {
		r := watchrec.New()
		env.watchers[watchKey{typeURL, key}] = r
		eng.Watch(typeURL, name, r)
		return r
	}
	for _, typeURL := range []string{thing, required} {
		watch(typeURL, "a", "a")
		watch(typeURL, "b", "b")
		watch(typeURL, fuzzXDSTPWatched(typeURL), fuzzXDSTPName(typeURL))
		watch(typeURL, fuzzUncached, fuzzUncached)
	}
	env.sentinel = watch(thing, fuzzSentinel, fuzzSentinel)

	env.st = env.srv.WaitStream(t)
	// Wait until both types are subscribed in full: watches made in a
	// loop may reach the wire in several requests.
	pending := map[string]bool{thing: true, required: true}
	ctx, cancel := context.WithTimeout(context.Background(), fuzzWait)
	defer cancel()
	for len(pending) > 0 {
		req, err := env.st.Recv(ctx)
		if err != nil {
			t.Fatalf("waiting for the subscriptions: %v", err)
		}
		if slices.Equal(req.GetResourceNames(), env.subscribed(req.GetTypeUrl())) {
			delete(pending, req.GetTypeUrl())
		}
	}
	env.reset(t)
}

func (env *fuzzEnv) close() {
	if env.eng != nil {
		env.eng.Close()
	}
	for i := len(env.cleanups) - 1; i >= 0; i-- {
		env.cleanups[i]()
	}
}

// subscribed is the sorted list of names every request of typeURL must
// carry: the watches never change, and no input may unsubscribe one.
func (env *fuzzEnv) subscribed(typeURL string) []string {
	var names []string
	for k := range env.watchers {
		if k.typeURL == typeURL {
			names = append(names, k.name)
		}
	}
	slices.Sort(names)
	return names
}

func sentinelRes(round int) *anypb.Any {
	return res(thing, fuzzSentinel, "n", strconv.Itoa(round))
}

// reset makes every cached name of both types ACKED with its original
// resource and the uncached one RECEIVED_ERROR without a resource, checks
// that the engine answered with ACKs (it still works, whatever the last
// input did), and drains the watchers.
func (env *fuzzEnv) reset(t *testing.T) {
	t.Helper()
	env.round++
	n := strconv.Itoa(env.round)
	nonces := map[string]string{}
	// required first: the sentinel, in the thing response, is then the
	// barrier for both.
	for _, typeURL := range []string{required, thing} {
		r := &discoverypb.DiscoveryResponse{
			TypeUrl:        typeURL,
			VersionInfo:    "r" + n,
			Nonce:          "r" + n + "-" + typeURL,
			ResourceErrors: []*discoverypb.ResourceError{scriptedads.ResourceError(fuzzUncached, codes.NotFound, "reset")},
		}
		for _, name := range fuzzCached(typeURL) {
			r.Resources = append(r.Resources, res(typeURL, name))
		}
		if typeURL == thing {
			r.Resources = append(r.Resources, sentinelRes(env.round))
		}
		env.st.SendT(t, r)
		nonces[typeURL] = r.Nonce
		env.lastVersion[typeURL] = r.VersionInfo
	}
	for typeURL, req := range env.awaitAnswers(t, nonces) {
		if req.GetErrorDetail() != nil || req.GetVersionInfo() != "r"+n {
			t.Fatalf("reset: %s answered with version %q, NACK %v; want an ACK of version %q: the engine stopped working",
				typeURL, req.GetVersionInfo(), req.GetErrorDetail(), "r"+n)
		}
	}
	env.barrier(t)
	states := env.states()
	for _, typeURL := range []string{thing, required} {
		for _, name := range fuzzCached(typeURL) {
			if s := states[watchKey{typeURL, name}]; s.status != adminpb.ClientResourceStatus_ACKED || !s.cached {
				t.Fatalf("after reset: %s %q is %v, cached %v; want ACKED and cached", typeURL, name, s.status, s.cached)
			}
		}
		if s := states[watchKey{typeURL, fuzzUncached}]; s.status != adminpb.ClientResourceStatus_RECEIVED_ERROR || s.cached {
			t.Fatalf("after reset: %s %q is %v, cached %v; want RECEIVED_ERROR, not cached", typeURL, fuzzUncached, s.status, s.cached)
		}
	}
	env.checkLogs(t)
}

// probe sends a thing response changing only the sentinel (thing is not
// all-resources-required, so no other resource is touched) and waits for
// its ACK and for the sentinel's callback. Once it returns, everything
// sent before has been applied, answered (if it was going to be) and
// notified. The events the watchers got meanwhile are returned.
func (env *fuzzEnv) probe(t *testing.T) map[watchKey][]watchrec.Event {
	t.Helper()
	env.round++
	nonce := "p" + strconv.Itoa(env.round)
	env.st.SendT(t, &discoverypb.DiscoveryResponse{TypeUrl: thing, VersionInfo: nonce, Nonce: nonce, Resources: []*anypb.Any{sentinelRes(env.round)}})
	ack := env.awaitAnswers(t, map[string]string{thing: nonce})[thing]
	if ack.GetErrorDetail() != nil || ack.GetVersionInfo() != nonce {
		t.Fatalf("a valid response was answered with version %q, NACK %v; want an ACK of version %q: the engine stopped working",
			ack.GetVersionInfo(), ack.GetErrorDetail(), nonce)
	}
	return env.barrier(t)
}

// barrier waits for the sentinel's callback of the current round, then
// collects every watcher's events, checking that each error is an
// *engine.Error with a non-OK code.
func (env *fuzzEnv) barrier(t *testing.T) map[watchKey][]watchrec.Event {
	t.Helper()
	want := strconv.Itoa(env.round)
	timeout := time.NewTimer(fuzzWait)
	defer timeout.Stop()
	events := map[watchKey][]watchrec.Event{}
	for done := false; !done; {
		select {
		case ev := <-env.sentinel.Events():
			events[watchKey{thing, fuzzSentinel}] = append(events[watchKey{thing, fuzzSentinel}], ev)
			if r, ok := ev.Resource.(*testtype.Resource); ok && !ev.Ambient && r.Fields["n"] == want {
				done = true
			}
		case <-timeout.C:
			t.Fatalf("the sentinel's update %s was not notified within %v: the engine stopped working", want, fuzzWait)
		}
	}
	for k, r := range env.watchers {
		if r == env.sentinel {
			continue
		}
		for drained := false; !drained; {
			select {
			case ev := <-r.Events():
				events[k] = append(events[k], ev)
			default:
				drained = true
			}
		}
	}
	for k, evs := range events {
		for _, ev := range evs {
			checkWatcherError(t, k, ev)
		}
	}
	return events
}

// checkWatcherError checks what A88 and the engine promise of any error a
// watcher sees: an *engine.Error, with a gRPC code that is not OK, whose
// message ends with the node ID.
func checkWatcherError(t *testing.T, k watchKey, ev watchrec.Event) {
	t.Helper()
	if ev.Err == nil {
		return
	}
	if c := status.Code(ev.Err); c == codes.OK {
		t.Errorf("%s %q: watcher got an error with code OK: %v", k.typeURL, k.name, ev)
	}
	if engine.KindOf(ev.Err) == engine.KindUnknown {
		t.Errorf("%s %q: watcher got an error that is not an *engine.Error: %T %v", k.typeURL, k.name, ev.Err, ev.Err)
	}
	if !strings.HasSuffix(ev.Err.Error(), "(node ID: "+nodeID+")") {
		t.Errorf("%s %q: error %q does not end with the node ID", k.typeURL, k.name, ev.Err)
	}
}

// awaitAnswers reads requests until, for each type, one carries the
// type's nonce, and returns those. Every request read is checked: bounded
// in size, valid UTF-8 in its error_detail, and subscribing every watched
// name.
func (env *fuzzEnv) awaitAnswers(t *testing.T, nonces map[string]string) map[string]*discoverypb.DiscoveryRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fuzzWait)
	defer cancel()
	got := map[string]*discoverypb.DiscoveryRequest{}
	for len(got) < len(nonces) {
		req, err := env.st.Recv(ctx)
		if err != nil {
			t.Fatalf("waiting for the answers to nonces %q: %v (the engine stopped answering, or its stream ended)", nonces, err)
		}
		env.checkRequest(t, req)
		if want, ok := nonces[req.GetTypeUrl()]; ok && req.GetResponseNonce() == want {
			got[req.GetTypeUrl()] = req
		}
	}
	return got
}

func (env *fuzzEnv) checkRequest(t *testing.T, req *discoverypb.DiscoveryRequest) {
	t.Helper()
	bare := proto.Clone(req).(*discoverypb.DiscoveryRequest)
	bare.ResponseNonce, bare.VersionInfo = "", ""
	if n := proto.Size(bare); n > fuzzMaxRequest {
		t.Errorf("request of %d bytes without its nonce and version, want at most %d (error_detail of %d bytes)",
			n, fuzzMaxRequest, len(req.GetErrorDetail().GetMessage()))
	}
	if d := req.GetErrorDetail(); d != nil {
		if !utf8.ValidString(d.GetMessage()) {
			t.Errorf("error_detail message is not valid UTF-8: %.200q", d.GetMessage())
		}
		if codes.Code(d.GetCode()) != codes.InvalidArgument {
			t.Errorf("NACK with code %v, want INVALID_ARGUMENT", codes.Code(d.GetCode()))
		}
	}
	if want := env.subscribed(req.GetTypeUrl()); !slices.Equal(req.GetResourceNames(), want) {
		t.Errorf("%s request subscribes %q, want %q", req.GetTypeUrl(), req.GetResourceNames(), want)
	}
}

type resourceState struct {
	status adminpb.ClientResourceStatus
	cached bool
}

// states is the engine's CSDS view of every watched name.
func (env *fuzzEnv) states() map[watchKey]resourceState {
	out := map[watchKey]resourceState{}
	for _, g := range env.eng.Dump().GetGenericXdsConfigs() {
		out[watchKey{g.GetTypeUrl(), g.GetName()}] = resourceState{g.GetClientStatus(), g.GetXdsConfig() != nil}
	}
	return out
}

func (env *fuzzEnv) checkLogs(t *testing.T) {
	t.Helper()
	if msgs := env.errLogs.take(); len(msgs) > 0 {
		t.Errorf("the engine logged errors: %q", msgs)
	}
}

// errorLogs is a slog handler that keeps the engine's ERROR records: none
// of them (a request that cannot be marshalled, say) may follow from what
// a server sends.
type errorLogs struct {
	mu   sync.Mutex
	msgs []string
}

func (h *errorLogs) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }

func (h *errorLogs) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	h.msgs = append(h.msgs, b.String())
	h.mu.Unlock()
	return nil
}

func (h *errorLogs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errorLogs) WithGroup(string) slog.Handler      { return h }

func (h *errorLogs) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.msgs
	h.msgs = nil
	return m
}
