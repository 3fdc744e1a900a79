package scriptedads

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Stream is one StreamAggregatedResources call, as seen by the server. Its
// methods are safe for concurrent use.
type Stream struct {
	index  int
	failed bool
	md     metadata.MD

	sendCh  chan sendReq
	closing chan struct{} // closed by Close to make the handler return
	served  chan struct{} // closed when the handler stops serving
	done    chan struct{} // closed when the handler and receiving have ended

	mu       sync.Mutex
	queue    []*discoverypb.DiscoveryRequest
	recvErr  error // why receiving ended; nil while it goes on
	closeErr error
	closed   bool
	nonce    int
	changed  chan struct{} // closed and replaced on push and endRecv
}

type sendReq struct {
	resp  *discoverypb.DiscoveryResponse
	raw   bool // resp holds only unknown fields: bytes to send as they are
	reply chan sendResult
}

type sendResult struct {
	nonce string
	err   error
}

func newStream(ctx context.Context) *Stream {
	md, _ := metadata.FromIncomingContext(ctx)
	return &Stream{
		md:      md.Copy(),
		sendCh:  make(chan sendReq),
		closing: make(chan struct{}),
		served:  make(chan struct{}),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
	}
}

// Index returns the stream's position, from 0, in the order the server's
// streams were opened.
func (st *Stream) Index() int { return st.index }

// Failed reports whether the stream was ended at once by FailStreams.
func (st *Stream) Failed() bool { return st.failed }

// Metadata returns the request metadata (headers) the client opened the
// stream with.
func (st *Stream) Metadata() metadata.MD { return st.md.Copy() }

// Done returns a channel closed once the stream has ended, whatever ended
// it: Close, the client, Stop, Close of the server or FailStreams. By then
// every request the stream received is available to Recv.
func (st *Stream) Done() <-chan struct{} { return st.done }

// Recv returns the next request received on the stream, in arrival order,
// waiting for one if need be. Each request is returned once, as the client
// sent it. Once the queue is empty and the stream can receive no more, it
// returns the error that ended receiving: io.EOF if the client closed its
// sending side, the FailStreams error for a failed stream, otherwise the
// gRPC error of the ended stream.
func (st *Stream) Recv(ctx context.Context) (*discoverypb.DiscoveryRequest, error) {
	for {
		st.mu.Lock()
		if len(st.queue) > 0 {
			req := st.queue[0]
			st.queue[0] = nil
			st.queue = st.queue[1:]
			st.mu.Unlock()
			return req, nil
		}
		err, ch := st.recvErr, st.changed
		st.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// RecvT is Recv for at most 10 seconds; it fails the test if no request
// arrives in time.
func (st *Stream) RecvT(t testing.TB) *discoverypb.DiscoveryRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := st.Recv(ctx)
	if err != nil {
		t.Fatalf("scriptedads: stream %d: waiting for a request: %v", st.index, err)
		return nil
	}
	return req
}

// ExpectNoRequest fails the test if a request is waiting on the stream or
// arrives within d. It returns early if the stream can receive no more.
// The offending request is left for Recv.
func (st *Stream) ExpectNoRequest(t testing.TB, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		st.mu.Lock()
		var req *discoverypb.DiscoveryRequest
		if len(st.queue) > 0 {
			req = st.queue[0]
		}
		ended, ch := st.recvErr != nil, st.changed
		st.mu.Unlock()
		if req != nil {
			t.Fatalf("scriptedads: stream %d: unexpected request: %s", st.index, prototext.Format(req))
			return
		}
		if ended {
			return
		}
		select {
		case <-timer.C:
			return
		case <-ch:
		}
	}
}

// Send sends resp on the stream and returns the nonce it carried. A
// response without a nonce gets the stream's next automatic one: "1",
// "2", ... counting only the responses that got one this way. resp itself
// is not modified; a copy is sent. Send returns once gRPC has taken the
// message, or with an error if the stream has ended; like any gRPC send it
// blocks while flow control holds the message back, that is while the
// client leaves a lot of data unread.
func (st *Stream) Send(resp *discoverypb.DiscoveryResponse) (nonce string, err error) {
	req := sendReq{
		resp:  proto.Clone(resp).(*discoverypb.DiscoveryResponse),
		reply: make(chan sendResult, 1),
	}
	select {
	case st.sendCh <- req:
	case <-st.served:
		return "", fmt.Errorf("scriptedads: stream %d has ended", st.index)
	}
	r := <-req.reply
	return r.nonce, r.err
}

// SendRaw sends b as the serialized response, whatever it holds: bytes
// that are not a valid DiscoveryResponse, or one built by hand. No nonce
// is added. It returns once gRPC has taken the message.
func (st *Stream) SendRaw(b []byte) error {
	// A message holding only unknown fields marshals to exactly those
	// bytes, which lets the server's proto codec carry any payload.
	resp := &discoverypb.DiscoveryResponse{}
	resp.ProtoReflect().SetUnknown(protoreflect.RawFields(bytes.Clone(b)))
	req := sendReq{resp: resp, raw: true, reply: make(chan sendResult, 1)}
	select {
	case st.sendCh <- req:
	case <-st.served:
		return fmt.Errorf("scriptedads: stream %d has ended", st.index)
	}
	return (<-req.reply).err
}

// SendRawT is SendRaw that fails the test on error.
func (st *Stream) SendRawT(t testing.TB, b []byte) {
	t.Helper()
	if err := st.SendRaw(b); err != nil {
		t.Fatalf("scriptedads: stream %d: send: %v", st.index, err)
	}
}

// SendT is Send that fails the test on error.
func (st *Stream) SendT(t testing.TB, resp *discoverypb.DiscoveryResponse) (nonce string) {
	t.Helper()
	nonce, err := st.Send(resp)
	if err != nil {
		t.Fatalf("scriptedads: stream %d: send: %v", st.index, err)
		return ""
	}
	return nonce
}

// Close ends the stream with err as its status (a status error; nil means
// OK, any other error reaches the client as codes.Unknown), and returns
// once the stream has ended. Closing an ended stream does nothing.
func (st *Stream) Close(err error) {
	st.mu.Lock()
	if !st.closed {
		st.closed = true
		st.closeErr = err
		close(st.closing)
	}
	st.mu.Unlock()
	<-st.done
}

// serve runs in the handler goroutine, which alone may send on the gRPC
// stream, until the stream must end; it returns the stream's status.
func (st *Stream) serve(ss grpc.ServerStream) error {
	ctx := ss.Context()
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-st.closing:
			st.mu.Lock()
			defer st.mu.Unlock()
			return st.closeErr
		case req := <-st.sendCh:
			// The nonce is assigned here, not in Send, so that nonces
			// follow wire order even when Send is called concurrently.
			if req.resp.Nonce == "" && !req.raw {
				st.mu.Lock()
				st.nonce++
				req.resp.Nonce = strconv.Itoa(st.nonce)
				st.mu.Unlock()
			}
			err := ss.SendMsg(req.resp)
			req.reply <- sendResult{nonce: req.resp.Nonce, err: err}
		}
	}
}

func (st *Stream) push(req *discoverypb.DiscoveryRequest) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.queue = append(st.queue, req)
	st.notifyLocked()
}

func (st *Stream) endRecv(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.recvErr = err
	st.notifyLocked()
}

func (st *Stream) notifyLocked() {
	close(st.changed)
	st.changed = make(chan struct{})
}
