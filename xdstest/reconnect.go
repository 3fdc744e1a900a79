package xdstest

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// FastReconnect is a dial option for clients of a test server: gRPC's own
// reconnection backoff starts at one second, and a test that stops and
// restarts a server would wait that long for its client to notice. With
// it the client reconnects within 100 ms. Give it to the client's
// transport, as transport.GRPC(xdstest.FastReconnect).
var FastReconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.2, MaxDelay: 100 * time.Millisecond},
	MinConnectTimeout: time.Second,
})
