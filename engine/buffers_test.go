package engine_test

import (
	"bytes"
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/testutil/scriptedads"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
	"github.com/xdsengine/xdsengine/types/cds"
)

// TestGRPCTransportSendsBuffers: the gRPC transport's streams take a
// message as buffers, and the server reads their bytes in order as one
// message, as it reads one sent whole.
func TestGRPCTransportSendsBuffers(t *testing.T) {
	s := scriptedads.Start(t)
	tr, err := transport.GRPC().Build(bootstrap.InsecureServer(s.Addr()), transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := tr.NewStream(ctx, transport.ADSMethod)
	if err != nil {
		t.Fatal(err)
	}
	bs, ok := st.(transport.BuffersSender)
	if !ok {
		t.Fatalf("the gRPC transport's stream %T is not a BuffersSender", st)
	}
	want := &discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, VersionInfo: "1", ResponseNonce: "n1", ResourceNames: []string{"a", "b", "c"}}
	// Two messages of whole fields, whose bytes together are the request.
	head := mustMarshal(t, &discoverypb.DiscoveryRequest{TypeUrl: want.TypeUrl, VersionInfo: want.VersionInfo, ResponseNonce: want.ResponseNonce})
	names := mustMarshal(t, &discoverypb.DiscoveryRequest{ResourceNames: want.ResourceNames})
	server := s.WaitStream(t)
	for _, tc := range []struct {
		name string
		send func() error
	}{
		{"SendBuffers", func() error { return bs.SendBuffers(net.Buffers{head, names}) }},
		{"Send", func() error { return st.Send(append(bytes.Clone(head), names...)) }},
	} {
		if err := tc.send(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := server.RecvT(t); !proto.Equal(got, want) {
			t.Errorf("%s: the server read %v, want %v", tc.name, got, want)
		}
	}
}

// TestRequestBuffers: an ACK repeats the type's names. A stream that
// takes buffers gets them as the buffer the engine keeps, the same bytes
// for every ACK while the names do not change; a stream with Send alone
// gets each request whole. Either way the server reads the same requests.
func TestRequestBuffers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// sendOnly hides the stream's SendBuffers.
		sendOnly    bool
		wantBuffers int
	}{
		{"Send and SendBuffers", false, 2},
		{"Send alone", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &memTransport{streams: make(chan *memStream, 1)}
			var builder transport.Builder = tr
			if tc.sendOnly {
				builder = sendOnlyTransport{tr}
			}
			e := cdsEngine(t, "mem", builder)
			const n = 3
			c := &counter{tb: t}
			w := c.watcher()
			var names []string
			for i := 0; i < n; i++ {
				names = append(names, benchClusterName(i, false))
				defer e.Watch(cds.TypeURL, names[i], w)()
			}
			st := <-tr.streams
			st.awaitSubscription(t, n)
			var kept []byte // the first ACK's names
			for salt := 0; salt < 2; salt++ {
				c.wg.Add(n)
				st.replies <- clusterResponse(t, n, n, salt)
				msg := <-st.requests
				if len(msg) != tc.wantBuffers {
					t.Fatalf("ACK %d came in %d buffers, want %d", salt, len(msg), tc.wantBuffers)
				}
				req := &discoverypb.DiscoveryRequest{}
				if err := proto.Unmarshal(bytes.Join(msg, nil), req); err != nil {
					t.Fatal(err)
				}
				if want := "v" + strconv.Itoa(salt); req.GetVersionInfo() != want || req.GetErrorDetail() != nil || !slices.Equal(req.GetResourceNames(), names) {
					t.Fatalf("ACK %d: version %q, error %v, names %v; want version %q, no error, names %v",
						salt, req.GetVersionInfo(), req.GetErrorDetail(), req.GetResourceNames(), want, names)
				}
				if tc.wantBuffers == 2 {
					if kept == nil {
						kept = msg[1]
					} else if &msg[1][0] != &kept[0] {
						t.Error("the second ACK's names are a copy, not the buffer the first ACK sent")
					}
				}
				c.wg.Wait()
			}
		})
	}
}

// sendOnlyTransport is memTransport with streams that have Send and Recv
// alone, as a transport written before BuffersSender.
type sendOnlyTransport struct{ *memTransport }

func (t sendOnlyTransport) Build(bootstrap.ServerConfig, transport.Options) (transport.Transport, error) {
	return t, nil
}

func (t sendOnlyTransport) NewStream(ctx context.Context, method string) (transport.Stream, error) {
	st, err := t.memTransport.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	return struct{ transport.Stream }{st}, nil
}

// cdsEngine is an engine of the Cluster type on the one server at addr,
// reached through tr, closed when the test ends.
func cdsEngine(t *testing.T, addr string, tr transport.Builder) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{
		Bootstrap: &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer(addr)}, Node: bootstrap.Node{ID: "test"}},
		Registry:  registry.MustNew(cds.Type),
		Switches:  &features.Switches{},
		Transport: tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
