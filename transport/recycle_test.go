package transport_test

import (
	"bytes"
	"context"
	"testing"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/transport"
)

// TestRecycle: the gRPC transport's streams recycle, and a message read
// after others were recycled has its own bytes, whatever its size
// against theirs; memory recycled is read into again.
func TestRecycle(t *testing.T) {
	srv := scriptedads.Start(t)
	tr, err := transport.GRPC().Build(bootstrap.InsecureServer(srv.Addr()), transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := tr.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatal(err)
	}
	recycler, ok := st.(transport.Recycler)
	if !ok {
		t.Fatalf("the gRPC transport's stream (%T) does not recycle", st)
	}
	if err := st.Send(nil); err != nil { // a request, so that the server sees the stream
		t.Fatal(err)
	}
	ss := srv.WaitStream(t)
	ss.RecvT(t)
	recycled := map[*byte]bool{} // the last byte of each recycled message's memory
	reused := 0
	for i, size := range []int{100, 5000, 20000, 20000, 19000, 21000, 5000, 300000, 300000, 4999, 20000, 20000, 300001} {
		resp := scriptedads.Response("type", "v", &anypb.Any{TypeUrl: "type", Value: bytes.Repeat([]byte{byte('a' + i)}, size)})
		ss.SendT(t, resp)
		b, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got := &discoverypb.DiscoveryResponse{}
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatalf("message %d (%d bytes) does not parse: %v", i, size, err)
		}
		if len(got.GetResources()) != 1 || !bytes.Equal(got.GetResources()[0].GetValue(), resp.GetResources()[0].GetValue()) {
			t.Fatalf("message %d (%d bytes): not the resource sent", i, size)
		}
		last := &b[:cap(b)][cap(b)-1]
		if recycled[last] {
			reused++
		}
		recycled[last] = true
		recycler.Recycle(b)
	}
	if reused == 0 {
		t.Error("no message was read into memory recycled before")
	}
}
