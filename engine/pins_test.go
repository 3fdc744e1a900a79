package engine_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest/testtype"
)

// The behaviours below sit where the engine and the stream meet; they are
// pinned here so that a change of either side cannot move them unseen.

// TestNoDecodeAcrossReconnect: a server that sends its resources again on
// a new stream, unchanged, has them recognized by the bytes it sent
// before (the server's decode memo outlives its streams): the decoder is
// not called again, nothing is delivered again, and the new stream's
// response is ACKed.
func TestNoDecodeAcrossReconnect(t *testing.T) {
	var decodes atomic.Int64
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		c.Registry = registry.MustNew(countDecodes(testtype.Type(thing, false), &decodes))
	}})
	wa, _ := f.watch(thing, "a")
	wb, _ := f.watch(thing, "b")
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, thing, "a", "b")
	sent := []*anypb.Any{res(thing, "a", "v", "1"), res(thing, "b", "v", "1")}
	n := st.SendT(t, resp(thing, "1", sent...))
	wa.NextChanged(t)
	wb.NextChanged(t)
	wantRequest(t, st.RecvT(t), thing, "1", n, "a", "b")
	if got := decodes.Load(); got != 2 {
		t.Fatalf("first response: %d decodes, want 2", got)
	}
	st.Close(nil) // after a response: a new stream at once (A57)
	st2 := f.servers[0].WaitStream(t)
	wantRequest(t, st2.RecvT(t), thing, "1", "", "a", "b")
	// Reordered too: the memo finds them by name, not only by index.
	n2 := st2.SendT(t, resp(thing, "2", sent[1], sent[0]))
	wantRequest(t, st2.RecvT(t), thing, "2", n2, "a", "b")
	wa.ExpectNone(t, 50*time.Millisecond)
	wb.ExpectNone(t, 0)
	if got := decodes.Load(); got != 2 {
		t.Fatalf("after a reconnect: %d decodes in all, want still 2", got)
	}
	if v := f.eng.ResourceStatus(thing, "a").GetVersionInfo(); v != "2" {
		t.Fatalf("a's version %q, want 2", v)
	}
}

// TestCancelAndWatchAgainBeforeAWrite: a watch cancelled and made again
// before any request without it is written keeps the cached resource (the
// server, which still has it subscribed, will not send it again): the new
// watcher gets it at once, and no request goes out, since the name never
// left the subscription.
func TestCancelAndWatchAgainBeforeAWrite(t *testing.T) {
	var gate *sendGate
	f := newFixture(t, fixtureOpts{mutate: func(c *engine.Config) {
		gate = newSendGate(c.Transport)
		c.Transport = gate
	}})
	wa, cancelA := f.watch(thing, "a")
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, thing, "a")
	n := st.SendT(t, resp(thing, "1", res(thing, "a", "v", "1")))
	wa.NextChanged(t)
	wantRequest(t, st.RecvT(t), thing, "1", n, "a")

	// The writer is held in the request of another type, so that the
	// cancel and the new watch of a both happen before it can write.
	gate.hold()
	f.watch(required, "other")
	<-gate.entered
	cancelA()
	wa2, _ := f.watch(thing, "a")
	if ev := wa2.NextChanged(t); ev.Err != nil || ev.Resource.(*testtype.Resource).Fields["v"] != "1" {
		t.Fatalf("new watcher got %v, want the cached resource", ev)
	}
	gate.open()
	recvNames(t, st, required, "other")
	st.ExpectNoRequest(t, 50*time.Millisecond)
	checkDump(t, f.eng, thing, "a", adminpb.ClientResourceStatus_ACKED, true)
}

// TestACKAfterApply: a response's answer is written only once the whole
// response is applied, so the moment a server reads an ACK, CSDS shows
// every resource of it, at its version: here a response large enough to
// be applied in many parts.
func TestACKAfterApply(t *testing.T) {
	const n = 1000
	f := newFixture(t, fixtureOpts{})
	w := engine.WatcherFuncs{}
	names := make([]string, n)
	for i := range names {
		names[i] = "r" + strconv.Itoa(10000+i)
		defer f.eng.Watch(required, names[i], w)()
	}
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, required, names...)
	for _, version := range []string{"1", "2"} {
		resources := make([]*anypb.Any, n)
		for i, name := range names {
			resources[i] = res(required, name, "v", version)
		}
		nonce := st.SendT(t, resp(required, version, resources...))
		ack := st.RecvT(t)
		wantRequest(t, ack, required, version, nonce, names...)
		// Read at once, as the server reads the ACK: nothing may still be
		// on its way into the cache.
		got := map[string]string{}
		for _, g := range f.eng.Dump().GetGenericXdsConfigs() {
			if g.GetClientStatus() == adminpb.ClientResourceStatus_ACKED {
				got[g.GetName()] = g.GetVersionInfo()
			}
		}
		for _, name := range names {
			if got[name] != version {
				t.Fatalf("ACK of version %s read, but CSDS shows %s at version %q (ACKED ones only)", version, name, got[name])
			}
		}
	}
}
