package main

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestResolveEnds: the README's program ends when it cannot resolve,
// with the status code that says why, instead of waiting for ever.
func TestResolveEnds(t *testing.T) {
	tests := []struct {
		name     string
		server   func(*xdstest.Server)
		deadline time.Duration
		code     codes.Code
		within   time.Duration // the error comes from the engine, well before the deadline
	}{
		{
			name:     "server stopped: the port is closed",
			server:   func(s *xdstest.Server) { s.Stop() },
			deadline: 30 * time.Second,
			code:     codes.Unavailable,
			within:   10 * time.Second,
		},
		{
			name:     "the server never answers",
			server:   func(*xdstest.Server) {}, // no Set: no response at all
			deadline: 500 * time.Millisecond,
			code:     codes.DeadlineExceeded,
			within:   5 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := xdstest.NewServer(t, xdstest.Options{})
			t.Setenv(bootstrap.EnvConfig, string(srv.Bootstrap(xdstest.BootstrapOptions{})))
			tt.server(srv)

			ctx, cancel := context.WithTimeout(context.Background(), tt.deadline)
			defer cancel()
			start := time.Now()
			g, err := resolve(ctx, "example.com")
			took := time.Since(start)
			if err == nil {
				t.Fatalf("resolved %v, want an error", g)
			}
			if status.Code(err) != tt.code || took > tt.within {
				t.Errorf("after %v: %v (code %s), want code %s within %v", took, err, status.Code(err), tt.code, tt.within)
			}
			t.Logf("after %v: %v", took.Round(time.Millisecond), err)
		})
	}
}
