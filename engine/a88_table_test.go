package engine_test

import (
	"slices"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// TestA88BehaviorTable encodes every row of gRFC A88's "Summary of
// Behavior Changes" once: the error, whether a resource was cached,
// fail_on_data_errors, and what the watcher must see and the cache must
// hold afterwards.
func TestA88BehaviorTable(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) { testA88BehaviorTable(t, p) })
	}
}

func testA88BehaviorTable(t *testing.T, p protocol) {
	type trigger func(t *testing.T, f *fixture, st adsStream, typeURL string)
	var (
		channelTransientFailure trigger = func(t *testing.T, f *fixture, st adsStream, typeURL string) {
			// Cut the server: the open stream ends, and the reconnection
			// finds nobody (TRANSIENT_FAILURE, a failure without response).
			f.servers[0].Stop()
		}
		streamFailedWithoutResponse trigger = func(t *testing.T, f *fixture, st adsStream, typeURL string) {
			if f.eng.Dump().GetGenericXdsConfigs()[0].GetXdsConfig() != nil {
				// This stream saw a response, so its end is no error
				// (A57); the engine opens the next one at once.
				st.close(nil)
				st = p.wait(t, f.servers[0])
				st.recv(t)
			}
			st.close(status.Error(codes.Unavailable, "scripted failure"))
		}
		nack trigger = func(t *testing.T, f *fixture, st adsStream, typeURL string) {
			st.send(t, typeURL, "2", res(typeURL, "r", "invalid", "port 0 out of range"))
		}

		deletion trigger = func(t *testing.T, f *fixture, st adsStream, typeURL string) {
			st.remove(t, typeURL, "2", "r", res(typeURL, "other"))
		}
		tp3 = func(code codes.Code) trigger {
			return func(t *testing.T, f *fixture, st adsStream, typeURL string) {
				st.sendErrors(t, typeURL, "2", scriptedads.ResourceError("r", code, "scripted"))
			}
		}
	)

	tests := []struct {
		row         string
		typeURL     string
		trigger     trigger
		cached      bool
		failOnData  bool
		wantAmbient bool
		wantCode    codes.Code
		wantStatus  adminpb.ClientResourceStatus // CSDS afterwards
		wantCached  bool                         // resource still in CSDS
	}{
		{"channel TRANSIENT_FAILURE, uncached", thing, channelTransientFailure, false, false, false, codes.Unavailable, adminpb.ClientResourceStatus_REQUESTED, false},
		{"channel TRANSIENT_FAILURE, cached", thing, channelTransientFailure, true, false, true, codes.Unavailable, adminpb.ClientResourceStatus_ACKED, true},
		{"channel TRANSIENT_FAILURE, cached, fail_on_data_errors", thing, channelTransientFailure, true, true, true, codes.Unavailable, adminpb.ClientResourceStatus_ACKED, true},
		{"stream failed without response, uncached", thing, streamFailedWithoutResponse, false, false, false, codes.Unavailable, adminpb.ClientResourceStatus_REQUESTED, false},
		{"stream failed without response, cached", thing, streamFailedWithoutResponse, true, true, true, codes.Unavailable, adminpb.ClientResourceStatus_ACKED, true},
		{"NACK, uncached", thing, nack, false, false, false, codes.InvalidArgument, adminpb.ClientResourceStatus_NACKED, false},
		{"NACK, cached", thing, nack, true, false, true, codes.InvalidArgument, adminpb.ClientResourceStatus_NACKED, true},
		{"NACK, cached, fail_on_data_errors", thing, nack, true, true, false, codes.InvalidArgument, adminpb.ClientResourceStatus_NACKED, false},
		{"LDS/CDS deletion, cached", required, deletion, true, false, true, codes.NotFound, adminpb.ClientResourceStatus_DOES_NOT_EXIST, true},
		{"LDS/CDS deletion, cached, fail_on_data_errors", required, deletion, true, true, false, codes.NotFound, adminpb.ClientResourceStatus_DOES_NOT_EXIST, false},
		{"TP3 NOT_FOUND, uncached", thing, tp3(codes.NotFound), false, false, false, codes.NotFound, adminpb.ClientResourceStatus_RECEIVED_ERROR, false},
		{"TP3 PERMISSION_DENIED, uncached", thing, tp3(codes.PermissionDenied), false, true, false, codes.PermissionDenied, adminpb.ClientResourceStatus_RECEIVED_ERROR, false},
		{"TP3 NOT_FOUND, cached", thing, tp3(codes.NotFound), true, false, true, codes.NotFound, adminpb.ClientResourceStatus_RECEIVED_ERROR, true},
		{"TP3 PERMISSION_DENIED, cached", thing, tp3(codes.PermissionDenied), true, false, true, codes.PermissionDenied, adminpb.ClientResourceStatus_RECEIVED_ERROR, true},
		{"TP3 NOT_FOUND, cached, fail_on_data_errors", thing, tp3(codes.NotFound), true, true, false, codes.NotFound, adminpb.ClientResourceStatus_RECEIVED_ERROR, false},
		{"TP3 PERMISSION_DENIED, cached, fail_on_data_errors", thing, tp3(codes.PermissionDenied), true, true, false, codes.PermissionDenied, adminpb.ClientResourceStatus_RECEIVED_ERROR, false},
		{"TP3 other status, uncached", thing, tp3(codes.Unavailable), false, false, false, codes.Unavailable, adminpb.ClientResourceStatus_RECEIVED_ERROR, false},
		{"TP3 other status, cached", thing, tp3(codes.Internal), true, false, true, codes.Internal, adminpb.ClientResourceStatus_RECEIVED_ERROR, true},
		{"TP3 other status, cached, fail_on_data_errors", thing, tp3(codes.Unavailable), true, true, true, codes.Unavailable, adminpb.ClientResourceStatus_RECEIVED_ERROR, true},
	}
	for _, tc := range tests {
		t.Run(tc.row, func(t *testing.T) {
			feats := p.features
			if tc.failOnData {
				feats = append(slices.Clip(feats), features.NameFailOnDataErrors)
			}
			f := newFixture(t, fixtureOpts{serverFeatures: feats})
			w, _ := f.watch(tc.typeURL, "r")
			st := p.wait(t, f.servers[0])
			st.recv(t)
			if tc.cached {
				st.send(t, tc.typeURL, "1", res(tc.typeURL, "r"))
				if ev := w.NextChanged(t); ev.Err != nil {
					t.Fatalf("setup: got %v, want the resource", ev)
				}
				st.recv(t) // ACK
			}
			tc.trigger(t, f, st, tc.typeURL)
			ev := w.Next(t)
			checkEvent(t, ev, tc.wantAmbient, tc.wantCode)
			checkDump(t, f.eng, tc.typeURL, "r", tc.wantStatus, tc.wantCached)
		})
	}
	t.Run("resource timeout, uncached", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{serverFeatures: p.features})
		w, _ := f.watch(thing, "r")
		p.wait(t, f.servers[0]).recv(t)
		f.clock.WaitForTimer(t, 15*time.Second)
		f.clock.Advance(15 * time.Second)
		checkEvent(t, w.Next(t), false, codes.NotFound)
		checkDump(t, f.eng, thing, "r", adminpb.ClientResourceStatus_DOES_NOT_EXIST, false)
	})
	t.Run("resource timeout, uncached, resource_timer_is_transient_error", func(t *testing.T) {
		f := newFixture(t, fixtureOpts{serverFeatures: append(slices.Clip(p.features), features.NameResourceTimerIsTransientError)})
		w, _ := f.watch(thing, "r")
		p.wait(t, f.servers[0]).recv(t)
		f.clock.WaitForTimer(t, 30*time.Second)
		f.clock.Advance(29 * time.Second)
		w.ExpectNone(t, 20*time.Millisecond)
		f.clock.Advance(time.Second)
		checkEvent(t, w.Next(t), false, codes.Unavailable)
		checkDump(t, f.eng, thing, "r", adminpb.ClientResourceStatus_TIMEOUT, false)
	})
}

func checkEvent(t *testing.T, ev watchrec.Event, wantAmbient bool, wantCode codes.Code) {
	t.Helper()
	if ev.Ambient != wantAmbient || ev.Err == nil || status.Code(ev.Err) != wantCode {
		kind := "OnResourceChanged"
		if wantAmbient {
			kind = "OnAmbientError"
		}
		t.Fatalf("watcher got %v, want %s with code %s", ev, kind, wantCode)
	}
	if engine.KindOf(ev.Err) == engine.KindUnknown {
		t.Errorf("error %v is not an *engine.Error", ev.Err)
	}
	if msg := ev.Err.Error(); len(msg) < len(nodeID) || msg[len(msg)-len("(node ID: "+nodeID+")"):] != "(node ID: "+nodeID+")" {
		t.Errorf("error %q does not end with the node ID", msg)
	}
}

func checkDump(t *testing.T, e *engine.Engine, typeURL, name string, want adminpb.ClientResourceStatus, wantCached bool) {
	t.Helper()
	for _, g := range e.Dump().GetGenericXdsConfigs() {
		if g.GetTypeUrl() != typeURL || g.GetName() != name {
			continue
		}
		if g.GetClientStatus() != want || (g.GetXdsConfig() != nil) != wantCached {
			t.Fatalf("CSDS %s %s: status %v cached %v, want %v cached %v", typeURL, name, g.GetClientStatus(), g.GetXdsConfig() != nil, want, wantCached)
		}
		return
	}
	t.Fatalf("CSDS has no entry for %s %s", typeURL, name)
}
