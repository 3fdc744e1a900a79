package engine_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWatchReceiveACK(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	w, _ := f.watch(thing, "a")
	st := f.servers[0].WaitStream(t)
	req := st.RecvT(t)
	wantRequest(t, req, thing, "", "", "a")
	if req.GetNode().GetId() != nodeID {
		t.Fatalf("first request node = %v, want id %q", req.GetNode(), nodeID)
	}
	nonce := st.SendT(t, resp(thing, "1", res(thing, "a")))
	ev := w.NextChanged(t)
	if ev.Err != nil || resourceName(t, ev.Resource) != "a" {
		t.Fatalf("got %v, want resource a", ev)
	}
	ack := st.RecvT(t)
	wantRequest(t, ack, thing, "1", nonce, "a")
	if ack.GetNode() != nil {
		t.Fatalf("ACK carries node; want node only on the first request")
	}
}
