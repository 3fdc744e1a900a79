package engine_test

import (
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// cachedFixture watches typeURL/"r" and gets version "1" of it cached.
func cachedFixture(t *testing.T, o fixtureOpts, typeURL string) (*fixture, *watchrec.Recorder, *scriptedads.Stream) {
	t.Helper()
	f := newFixture(t, o)
	w, _ := f.watch(typeURL, "r")
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	st.SendT(t, resp(typeURL, "1", res(typeURL, "r")))
	if ev := w.NextChanged(t); ev.Err != nil {
		t.Fatalf("setup: %v", ev)
	}
	st.RecvT(t)
	return f, w, st
}

// TestLegacyDataErrorHandling: GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false
// restores the behaviour before A88.
func TestLegacyDataErrorHandling(t *testing.T) {
	legacy := features.Switches{DisableDataErrorHandling: true}
	t.Run("deletion drops the resource", func(t *testing.T) {
		f, w, st := cachedFixture(t, fixtureOpts{switches: legacy}, required)
		st.SendT(t, resp(required, "2", res(required, "other")))
		checkEvent(t, w.Next(t), false, codes.NotFound)
		checkDump(t, f.eng, required, "r", adminpb.ClientResourceStatus_DOES_NOT_EXIST, false)
	})
	t.Run("ignore_resource_deletion keeps it silently", func(t *testing.T) {
		f, w, st := cachedFixture(t, fixtureOpts{switches: legacy, serverFeatures: []string{features.NameIgnoreResourceDeletion}}, required)
		st.SendT(t, resp(required, "2", res(required, "other")))
		st.RecvT(t)
		w.ExpectNone(t, 50*time.Millisecond)
		checkDump(t, f.eng, required, "r", adminpb.ClientResourceStatus_ACKED, true)
	})
	t.Run("fail_on_data_errors has no effect", func(t *testing.T) {
		f, w, st := cachedFixture(t, fixtureOpts{switches: legacy, serverFeatures: []string{features.NameFailOnDataErrors}}, thing)
		st.SendT(t, resp(thing, "2", res(thing, "r", "invalid", "bad")))
		checkEvent(t, w.Next(t), true, codes.InvalidArgument)
		checkDump(t, f.eng, thing, "r", adminpb.ClientResourceStatus_NACKED, true)
	})
	t.Run("TP3 errors are ignored", func(t *testing.T) {
		_, w, st := cachedFixture(t, fixtureOpts{switches: legacy}, thing)
		r := resp(thing, "2")
		r.ResourceErrors = []*discoverypb.ResourceError{scriptedads.ResourceError("r", codes.NotFound, "gone")}
		st.SendT(t, r)
		st.RecvT(t)
		w.ExpectNone(t, 50*time.Millisecond)
	})
	t.Run("resource_timer_is_transient_error has no effect", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{switches: legacy, serverFeatures: []string{features.NameResourceTimerIsTransientError}})
		w, _ := f.watch(thing, "r")
		f.servers[0].WaitStream(t).RecvT(t)
		f.clock.WaitForTimer(t, 15*time.Second)
		f.clock.Advance(15 * time.Second)
		checkEvent(t, w.Next(t), false, codes.NotFound)
	})
	t.Run("A88 default ignores deletions", func(t *testing.T) {
		f, w, st := cachedFixture(t, fixtureOpts{serverFeatures: []string{features.NameIgnoreResourceDeletion}}, required)
		st.SendT(t, resp(required, "2", res(required, "other")))
		checkEvent(t, w.Next(t), true, codes.NotFound)
		checkDump(t, f.eng, required, "r", adminpb.ClientResourceStatus_DOES_NOT_EXIST, true)
	})
}

// failOnNACK is a user's server feature: NACKs drop the cached resource,
// other data errors keep the A88 default.
type failOnNACK struct{}

func (failOnNACK) Name() string { return "example.com/fail_on_nack" }

func (failOnNACK) ErrorAction(ev features.ErrorEvent, def features.Action) features.Action {
	if ev.Reason == features.ReasonNACK {
		return features.Drop
	}
	return def
}

// slowTimer is a user's server feature that lengthens the timer.
type slowTimer struct{}

func (slowTimer) Name() string { return "example.com/slow_timer" }

func (slowTimer) ResourceTimer(def features.Timer) features.Timer {
	def.Timeout *= 4
	return def
}

func TestUserServerFeatures(t *testing.T) {
	opts := fixtureOpts{
		serverFeatures: []string{"example.com/fail_on_nack", "example.com/slow_timer", "unknown_feature_is_ignored"},
		features:       []features.ServerFeature{failOnNACK{}, slowTimer{}},
	}
	t.Run("error policy changes the NACK decision", func(t *testing.T) {
		f, w, st := cachedFixture(t, opts, thing)
		st.SendT(t, resp(thing, "2", res(thing, "r", "invalid", "bad")))
		checkEvent(t, w.Next(t), false, codes.InvalidArgument)
		checkDump(t, f.eng, thing, "r", adminpb.ClientResourceStatus_NACKED, false)
	})
	t.Run("and leaves deletions alone", func(t *testing.T) {
		f, w, st := cachedFixture(t, opts, required)
		st.SendT(t, resp(required, "2", res(required, "other")))
		checkEvent(t, w.Next(t), true, codes.NotFound)
		checkDump(t, f.eng, required, "r", adminpb.ClientResourceStatus_DOES_NOT_EXIST, true)
	})
	t.Run("timer policy folds over the default", func(t *testing.T) {
		f := newFixture(t, opts)
		f.watch(thing, "r")
		f.servers[0].WaitStream(t).RecvT(t)
		f.clock.WaitForTimer(t, 60*time.Second)
	})
	t.Run("folded in bootstrap order", func(t *testing.T) {
		o := opts
		o.serverFeatures = []string{features.NameResourceTimerIsTransientError, "example.com/slow_timer"}
		f := newFixture(t, o)
		f.watch(thing, "r")
		f.servers[0].WaitStream(t).RecvT(t)
		f.clock.WaitForTimer(t, 120*time.Second) // 30 s, then ×4
	})
	t.Run("a user feature overrides a built-in of the same name", func(t *testing.T) {
		o := fixtureOpts{serverFeatures: []string{features.NameFailOnDataErrors},
			features: []features.ServerFeature{features.Named(features.NameFailOnDataErrors)}}
		_, w, st := cachedFixture(t, o, thing)
		st.SendT(t, resp(thing, "2", res(thing, "r", "invalid", "bad")))
		checkEvent(t, w.Next(t), true, codes.InvalidArgument)
	})
}

// TestDumpFields checks the CSDS entry of each state in detail.
func TestDumpFields(t *testing.T) {
	f, w, st := cachedFixture(t, fixtureOpts{mutate: func(c *engine.Config) { c.Target = "xds:///svc" }}, thing)
	st.SendT(t, resp(thing, "2", res(thing, "r", "invalid", "bad port")))
	w.Next(t)
	w2, _ := f.watch(thing, "pending")
	_ = w2
	cc := f.eng.Dump()
	if cc.GetClientScope() != "xds:///svc" || cc.GetNode().GetId() != nodeID {
		t.Fatalf("client_scope %q node %v", cc.GetClientScope(), cc.GetNode())
	}
	byName := map[string]int{}
	for i, g := range cc.GetGenericXdsConfigs() {
		byName[g.GetName()] = i
	}
	r := cc.GetGenericXdsConfigs()[byName["r"]]
	if r.GetVersionInfo() != "1" || r.GetXdsConfig().GetTypeUrl() != thing || r.GetLastUpdated() == nil ||
		r.GetErrorState().GetVersionInfo() != "2" || r.GetErrorState().GetLastUpdateAttempt() == nil ||
		!contains(r.GetErrorState().GetDetails(), "bad port") {
		t.Errorf("NACKED entry = %v", r)
	}
	p := cc.GetGenericXdsConfigs()[byName["pending"]]
	if p.GetClientStatus() != adminpb.ClientResourceStatus_REQUESTED || p.GetXdsConfig() != nil || p.GetErrorState() != nil {
		t.Errorf("REQUESTED entry = %v", p)
	}
}
