package scriptedads_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const typeURL = "type.googleapis.com/google.protobuf.StringValue"

// dial returns an ADS client for addr that reconnects quickly, so that
// tests of Stop and Restart do not wait for gRPC's default backoff.
func dial(t *testing.T, addr string) discoverypb.AggregatedDiscoveryServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 50 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return discoverypb.NewAggregatedDiscoveryServiceClient(cc)
}

type clientStream = grpc.BidiStreamingClient[discoverypb.DiscoveryRequest, discoverypb.DiscoveryResponse]

// open opens a stream from the client; it is cancelled when the test ends.
func open(t *testing.T, c discoverypb.AggregatedDiscoveryServiceClient, opts ...grpc.CallOption) clientStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	cs, err := c.StreamAggregatedResources(ctx, opts...)
	if err != nil {
		t.Fatalf("StreamAggregatedResources: %v", err)
	}
	return cs
}

func send(t *testing.T, cs clientStream, req *discoverypb.DiscoveryRequest) {
	t.Helper()
	if err := cs.Send(req); err != nil {
		t.Fatalf("client Send: %v", err)
	}
}

func recv(t *testing.T, cs clientStream) *discoverypb.DiscoveryResponse {
	t.Helper()
	resp, err := cs.Recv()
	if err != nil {
		t.Fatalf("client Recv: %v", err)
	}
	return resp
}

func wantProto(t *testing.T, what string, want, got proto.Message) {
	t.Helper()
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func str(s string) *anypb.Any {
	a, err := anypb.New(wrapperspb.String(s))
	if err != nil {
		panic(err)
	}
	return a
}

func TestExchange(t *testing.T) {
	srv := scriptedads.Start(t)
	cs := open(t, dial(t, srv.Addr()))
	st := srv.WaitStream(t)
	if st.Index() != 0 {
		t.Errorf("Index() = %d, want 0", st.Index())
	}

	first := &discoverypb.DiscoveryRequest{
		Node:          &corepb.Node{Id: "n1"},
		TypeUrl:       typeURL,
		ResourceNames: []string{"a", "b"},
	}
	send(t, cs, first)
	wantProto(t, "first request", first, st.RecvT(t))

	// Nonces: automatic ones count only themselves, explicit ones are kept.
	for i, tc := range []struct{ nonce, want string }{
		{"", "1"}, {"", "2"}, {"mine", "mine"}, {"", "3"},
	} {
		resp := scriptedads.Response(typeURL, fmt.Sprint(i), str("a"))
		resp.Nonce = tc.nonce
		if got := st.SendT(t, resp); got != tc.want {
			t.Errorf("response %d: SendT nonce = %q, want %q", i, got, tc.want)
		}
		if resp.Nonce != tc.nonce {
			t.Errorf("response %d: Send modified its argument's nonce to %q", i, resp.Nonce)
		}
		want := proto.Clone(resp).(*discoverypb.DiscoveryResponse)
		want.Nonce = tc.want
		wantProto(t, fmt.Sprintf("response %d", i), want, recv(t, cs))
	}

	// A request without a node must be recorded without one: nothing is
	// back-filled from the first request.
	ack := &discoverypb.DiscoveryRequest{TypeUrl: typeURL, VersionInfo: "3", ResponseNonce: "3", ResourceNames: []string{"a", "b"}}
	send(t, cs, ack)
	wantProto(t, "ack", ack, st.RecvT(t))
	st.ExpectNoRequest(t, 20*time.Millisecond)

	wantLog := []scriptedads.Recorded{{Stream: 0, Req: first}, {Stream: 0, Req: ack}}
	if diff := cmp.Diff(wantLog, srv.Requests(), protocmp.Transform()); diff != "" {
		t.Errorf("Requests() (-want +got):\n%s", diff)
	}
}

// TestRequestsAsOnTheWire checks that fields the server's proto version
// does not know survive, so assertions see exactly what the client sent.
func TestRequestsAsOnTheWire(t *testing.T) {
	srv := scriptedads.Start(t)
	cs := open(t, dial(t, srv.Addr()))
	st := srv.WaitStream(t)
	req := &discoverypb.DiscoveryRequest{TypeUrl: typeURL}
	unknown := protowire.AppendTag(nil, 999, protowire.BytesType)
	unknown = protowire.AppendString(unknown, "from the future")
	req.ProtoReflect().SetUnknown(unknown)
	send(t, cs, req)
	got := st.RecvT(t)
	if diff := cmp.Diff(unknown, []byte(got.ProtoReflect().GetUnknown())); diff != "" {
		t.Errorf("unknown fields (-want +got):\n%s", diff)
	}
	// The log and Recv hand out independent copies.
	got.TypeUrl = "changed"
	if u := srv.Requests()[0].Req.GetTypeUrl(); u != typeURL {
		t.Errorf("Requests() type URL = %q after modifying Recv's result, want %q", u, typeURL)
	}
}

func TestRequestsAcrossStreams(t *testing.T) {
	srv := scriptedads.Start(t)
	c := dial(t, srv.Addr())
	const streams = 3
	var css []clientStream
	for i := range streams {
		css = append(css, open(t, c))
		st := srv.WaitStream(t)
		if st.Index() != i {
			t.Fatalf("stream %d: Index() = %d", i, st.Index())
		}
	}
	if n := srv.StreamCount(); n != streams {
		t.Errorf("StreamCount() = %d, want %d", n, streams)
	}
	// Send one at a time, waiting for the server to have it, so that the
	// arrival order is known.
	var want []scriptedads.Recorded
	for _, i := range []int{2, 0, 1, 0} {
		req := &discoverypb.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: []string{fmt.Sprint(len(want))}}
		send(t, css[i], req)
		want = append(want, scriptedads.Recorded{Stream: i, Req: req})
		waitFor(t, func() bool { return len(srv.Requests()) == len(want) })
	}
	if diff := cmp.Diff(want, srv.Requests(), protocmp.Transform()); diff != "" {
		t.Errorf("Requests() (-want +got):\n%s", diff)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStreamClose(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode codes.Code
		wantMsg  string
	}{
		{name: "OK", err: nil, wantCode: codes.OK},
		{name: "status error", err: status.Error(codes.Internal, "boom"), wantCode: codes.Internal, wantMsg: "boom"},
		{name: "unavailable", err: status.Error(codes.Unavailable, "going away"), wantCode: codes.Unavailable, wantMsg: "going away"},
		{name: "plain error", err: errors.New("oops"), wantCode: codes.Unknown, wantMsg: "oops"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := scriptedads.Start(t)
			cs := open(t, dial(t, srv.Addr()))
			st := srv.WaitStream(t)
			st.SendT(t, scriptedads.Response(typeURL, "1"))
			st.Close(tc.err)
			select {
			case <-st.Done():
			default:
				t.Error("Done not closed when Close returned")
			}
			st.Close(status.Error(codes.Aborted, "ignored")) // no effect
			recv(t, cs)                                      // the response sent before Close still arrives
			_, err := cs.Recv()
			if tc.wantCode == codes.OK {
				if err != io.EOF {
					t.Fatalf("client Recv = %v, want io.EOF", err)
				}
			} else if s := status.Convert(err); s.Code() != tc.wantCode || s.Message() != tc.wantMsg {
				t.Fatalf("client Recv = %v, want code %v message %q", err, tc.wantCode, tc.wantMsg)
			}
			if _, err := st.Send(scriptedads.Response(typeURL, "2")); err == nil {
				t.Error("Send after Close succeeded")
			}
			if _, err := st.Recv(context.Background()); err == nil {
				t.Error("Recv after Close succeeded")
			}
		})
	}
}

func TestClientEnds(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		srv := scriptedads.Start(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cs, err := dial(t, srv.Addr()).StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st := srv.WaitStream(t)
		send(t, cs, &discoverypb.DiscoveryRequest{TypeUrl: typeURL})
		st.RecvT(t)
		cancel()
		<-st.Done()
		if _, err := st.Recv(context.Background()); status.Code(err) != codes.Canceled {
			t.Errorf("server Recv after client cancel = %v, want code Canceled", err)
		}
		if _, err := st.Send(scriptedads.Response(typeURL, "1")); err == nil {
			t.Error("Send after client cancel succeeded")
		}
	})
	t.Run("half close", func(t *testing.T) {
		srv := scriptedads.Start(t)
		cs := open(t, dial(t, srv.Addr()))
		st := srv.WaitStream(t)
		send(t, cs, &discoverypb.DiscoveryRequest{TypeUrl: typeURL})
		if err := cs.CloseSend(); err != nil {
			t.Fatal(err)
		}
		st.RecvT(t) // queued before the EOF
		if _, err := st.Recv(context.Background()); err != io.EOF {
			t.Errorf("server Recv after CloseSend = %v, want io.EOF", err)
		}
		st.ExpectNoRequest(t, time.Hour) // returns at once: nothing can come
		// The server may still answer a half-closed stream.
		st.SendT(t, scriptedads.Response(typeURL, "1"))
		recv(t, cs)
		st.Close(nil)
		if _, err := cs.Recv(); err != io.EOF {
			t.Errorf("client Recv = %v, want io.EOF", err)
		}
	})
}

func TestFailStreams(t *testing.T) {
	srv := scriptedads.Start(t)
	c := dial(t, srv.Addr())
	srv.FailStreams(status.Error(codes.Unavailable, "broken"))
	for i := range 2 {
		cs := open(t, c)
		// The stream may already have failed, making Send report io.EOF;
		// either way the request must not be read.
		_ = cs.Send(&discoverypb.DiscoveryRequest{TypeUrl: typeURL})
		_, err := cs.Recv()
		if s := status.Convert(err); s.Code() != codes.Unavailable || s.Message() != "broken" {
			t.Fatalf("stream %d: client Recv = %v, want Unavailable \"broken\"", i, err)
		}
		st := srv.WaitStream(t)
		<-st.Done()
		if !st.Failed() || st.Index() != i {
			t.Errorf("stream %d: Failed() = %v, Index() = %d", i, st.Failed(), st.Index())
		}
		if _, err := st.Recv(context.Background()); status.Code(err) != codes.Unavailable {
			t.Errorf("stream %d: server Recv = %v, want the injected error", i, err)
		}
	}
	if got := srv.Requests(); len(got) != 0 {
		t.Errorf("failed streams recorded requests: %v", got)
	}

	srv.FailStreams(nil)
	cs := open(t, c)
	st := srv.WaitStream(t)
	if st.Failed() || st.Index() != 2 {
		t.Errorf("Failed() = %v, Index() = %d after FailStreams(nil)", st.Failed(), st.Index())
	}
	send(t, cs, &discoverypb.DiscoveryRequest{TypeUrl: typeURL})
	st.RecvT(t)
	if n := srv.StreamCount(); n != 3 {
		t.Errorf("StreamCount() = %d, want 3", n)
	}
}

func TestStopRestart(t *testing.T) {
	srv := scriptedads.Start(t)
	addr := srv.Addr()
	c := dial(t, addr)
	cs := open(t, c)
	st := srv.WaitStream(t)
	send(t, cs, &discoverypb.DiscoveryRequest{TypeUrl: typeURL})
	st.RecvT(t)

	srv.Stop()
	select {
	case <-st.Done():
	default:
		t.Error("stream not done when Stop returned")
	}
	if _, err := cs.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("client Recv after Stop = %v, want code Unavailable", err)
	}
	// New streams fail while stopped, and never reach the handler.
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cs, err := c.StreamAggregatedResources(ctx)
		if err == nil {
			_, err = cs.Recv()
		}
		cancel()
		if status.Code(err) != codes.Unavailable {
			t.Errorf("new stream while stopped: %v, want code Unavailable", err)
		}
	}
	if n := srv.StreamCount(); n != 1 {
		t.Errorf("StreamCount() = %d while stopped, want 1", n)
	}

	srv.Restart()
	if srv.Addr() != addr {
		t.Errorf("Addr() changed from %s to %s", addr, srv.Addr())
	}
	cs = open(t, c, grpc.WaitForReady(true))
	st = srv.WaitStream(t)
	if st.Index() != 1 {
		t.Errorf("Index() after Restart = %d, want 1", st.Index())
	}
	send(t, cs, &discoverypb.DiscoveryRequest{TypeUrl: typeURL})
	st.RecvT(t)
	st.SendT(t, scriptedads.Response(typeURL, "1"))
	recv(t, cs)
}

func TestWrapAndResourceError(t *testing.T) {
	srv := scriptedads.Start(t)
	cs := open(t, dial(t, srv.Addr()))
	st := srv.WaitStream(t)
	inner := str("payload")
	resp := scriptedads.Response(typeURL, "v1", scriptedads.Wrap("named", inner))
	resp.ResourceErrors = []*discoverypb.ResourceError{scriptedads.ResourceError("missing", codes.NotFound, "no such thing")}
	st.SendT(t, resp)
	got := recv(t, cs)

	if n := len(got.GetResources()); n != 1 {
		t.Fatalf("got %d resources, want 1", n)
	}
	wrapped := got.GetResources()[0]
	if u := wrapped.GetTypeUrl(); u != "type.googleapis.com/envoy.service.discovery.v3.Resource" {
		t.Errorf("wrapped type URL = %q", u)
	}
	var r discoverypb.Resource
	if err := wrapped.UnmarshalTo(&r); err != nil {
		t.Fatal(err)
	}
	if r.GetName() != "named" {
		t.Errorf("wrapped name = %q, want %q", r.GetName(), "named")
	}
	wantProto(t, "wrapped resource", inner, r.GetResource())

	if n := len(got.GetResourceErrors()); n != 1 {
		t.Fatalf("got %d resource errors, want 1", n)
	}
	re := got.GetResourceErrors()[0]
	if re.GetResourceName().GetName() != "missing" ||
		codes.Code(re.GetErrorDetail().GetCode()) != codes.NotFound ||
		re.GetErrorDetail().GetMessage() != "no such thing" {
		t.Errorf("resource error = %v", re)
	}
}

func TestNextStream(t *testing.T) {
	srv := scriptedads.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := srv.NextStream(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("NextStream with no stream = %v, want DeadlineExceeded", err)
	}

	// A waiting NextStream is woken by a new stream...
	var wg sync.WaitGroup
	var got *scriptedads.Stream
	wg.Go(func() {
		got, _ = srv.NextStream(context.Background())
	})
	open(t, dial(t, srv.Addr()))
	wg.Wait()
	if got == nil || got.Index() != 0 {
		t.Fatalf("NextStream = %v", got)
	}

	// ...and by Close.
	var err error
	wg.Go(func() {
		_, err = srv.NextStream(context.Background())
	})
	srv.Close()
	wg.Wait()
	if err == nil {
		t.Error("NextStream after Close succeeded")
	}
	srv.Close() // idempotent
}

func TestMetadata(t *testing.T) {
	srv := scriptedads.Start(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-test", "hello")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := dial(t, srv.Addr()).StreamAggregatedResources(ctx); err != nil {
		t.Fatal(err)
	}
	st := srv.WaitStream(t)
	if got := st.Metadata().Get("x-test"); len(got) != 1 || got[0] != "hello" {
		t.Errorf(`Metadata().Get("x-test") = %q`, got)
	}
}

// TestDeltaExchange: an incremental stream is driven as a SotW one is,
// with automatic nonces.
func TestDeltaExchange(t *testing.T) {
	srv := scriptedads.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := dial(t, srv.Addr()).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := &discoverypb.DeltaDiscoveryRequest{TypeUrl: "t", ResourceNamesSubscribe: []string{"a"}}
	if err := ds.Send(want); err != nil {
		t.Fatal(err)
	}
	st := srv.WaitDeltaStream(t)
	wantProto(t, "request", want, st.RecvT(t))
	resp := scriptedads.DeltaResponse("t", "v1", []*discoverypb.Resource{{Name: "a", Version: "1", Resource: str("x")}}, "b")
	if nonce := st.SendT(t, resp); nonce != "1" {
		t.Errorf("nonce %q, want 1", nonce)
	}
	got, err := ds.Recv()
	if err != nil {
		t.Fatal(err)
	}
	resp.Nonce = "1"
	wantProto(t, "response", resp, got)
	st.ExpectNoRequest(t, 20*time.Millisecond)
	st.Close(status.Error(codes.Unavailable, "bye"))
	if _, err := ds.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("after Close: %v, want Unavailable", err)
	}
}

// recordingTB captures failures so that the failing paths of the helpers
// can be tested.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func TestExpectNoRequest(t *testing.T) {
	tests := []struct {
		name     string
		sendAt   time.Duration // when the client sends; negative: never
		wait     time.Duration
		wantFail bool
	}{
		{name: "quiet", sendAt: -1, wait: 20 * time.Millisecond},
		{name: "request already queued", sendAt: 0, wait: 20 * time.Millisecond, wantFail: true},
		{name: "request arrives while waiting", sendAt: 30 * time.Millisecond, wait: 5 * time.Second, wantFail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := scriptedads.Start(t)
			cs := open(t, dial(t, srv.Addr()))
			st := srv.WaitStream(t)
			req := &discoverypb.DiscoveryRequest{TypeUrl: typeURL}
			var wg sync.WaitGroup
			defer wg.Wait()
			switch {
			case tc.sendAt == 0:
				send(t, cs, req)
				waitFor(t, func() bool { return len(srv.Requests()) == 1 })
			case tc.sendAt > 0:
				wg.Go(func() {
					time.Sleep(tc.sendAt)
					cs.Send(req)
				})
			}
			rtb := &recordingTB{TB: t}
			start := time.Now()
			st.ExpectNoRequest(rtb, tc.wait)
			if failed := len(rtb.failed) > 0; failed != tc.wantFail {
				t.Errorf("ExpectNoRequest failed = %v (%q), want %v", failed, rtb.failed, tc.wantFail)
			}
			if !tc.wantFail && time.Since(start) < tc.wait {
				t.Errorf("ExpectNoRequest returned after %v, before %v", time.Since(start), tc.wait)
			}
			if tc.wantFail {
				// The offending request is left for Recv.
				wantProto(t, "request after ExpectNoRequest", req, st.RecvT(t))
			}
		})
	}
}

func TestConcurrentSends(t *testing.T) {
	srv := scriptedads.Start(t)
	cs := open(t, dial(t, srv.Addr()))
	st := srv.WaitStream(t)
	const n = 20
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := st.Send(scriptedads.Response(typeURL, "v")); err != nil {
				t.Errorf("Send: %v", err)
			}
		})
	}
	wg.Wait()
	// Whatever the interleaving, the nonces on the wire are 1..n in order.
	for i := 1; i <= n; i++ {
		if got := recv(t, cs).GetNonce(); got != fmt.Sprint(i) {
			t.Fatalf("response %d has nonce %q", i, got)
		}
	}
}

// TestSendRaw: the bytes reach the client as given: hand-built ones in an
// order proto.Marshal would not use, and ones that do not parse.
func TestSendRaw(t *testing.T) {
	s := scriptedads.Start(t)
	cs := open(t, dial(t, s.Addr()))
	send(t, cs, &discoverypb.DiscoveryRequest{TypeUrl: "t"})
	st := s.WaitStream(t)
	st.RecvT(t)
	// nonce (5) before type_url (4): valid, and no nonce is added.
	st.SendRawT(t, []byte{0x2a, 0x02, 'n', '1', 0x22, 0x01, 'x'})
	wantProto(t, "raw response", &discoverypb.DiscoveryResponse{TypeUrl: "x", Nonce: "n1"}, recv(t, cs))
	// A resources entry (2) whose Any is cut short.
	st.SendRawT(t, []byte{0x12, 0x03, 0x0a, 0x05, 'a'})
	if _, err := cs.Recv(); status.Code(err) != codes.Internal {
		t.Fatalf("client Recv of bytes that do not parse: %v, want an INTERNAL unmarshal error", err)
	}
}
