package gcpmatrix_test

import (
	"context"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsengine/xdsengine/internal/testutil/gcpmatrix"
	"github.com/xdsengine/xdsengine/types/cds"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ask opens an ADS stream to addr, asks for cluster c1 and returns how
// many resources the answer has.
func ask(t *testing.T, addr string) int {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := discoverypb.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discoverypb.DiscoveryRequest{TypeUrl: cds.TypeURL, ResourceNames: []string{"c1"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatalf("no answer from %s: %v", addr, err)
	}
	return len(resp.GetResources())
}

// TestServer: each kind serves the clusters, counts what crosses its
// streams, and serves again at the same address, from the same cache,
// after Stop and Restart.
func TestServer(t *testing.T) {
	for _, kind := range gcpmatrix.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			srv, err := gcpmatrix.Start(kind)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			if n := ask(t, srv.Addr()); n != 1 {
				t.Fatalf("answer with %d resources, want c1", n)
			}
			if req, resp := srv.Counts(); req != 1 || resp != 1 {
				t.Errorf("counts %d requests, %d responses; want 1 and 1", req, resp)
			}
			srv.Stop()
			cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if st, err := discoverypb.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx, grpc.WaitForReady(false)); err == nil {
				if _, err := st.Recv(); err == nil {
					t.Fatal("a stream to the stopped server got a response")
				}
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			if n := ask(t, srv.Addr()); n != 1 {
				t.Fatalf("after the restart: answer with %d resources, want c1", n)
			}
			if req, resp := srv.Counts(); req != 2 || resp != 2 {
				t.Errorf("after the restart: counts %d requests, %d responses; want 2 and 2", req, resp)
			}
		})
	}
}
