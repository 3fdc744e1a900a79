package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdsengine/xdsengine/relay"
)

// upstreamService is the health service name that reports the upstream.
const upstreamService = "upstream"

// healthInterval is how often the upstream's health is read; tests
// shorten it.
var healthInterval = time.Second

func registerHealth(s *grpc.Server, hs *health.Server) {
	healthpb.RegisterHealthServer(s, hs)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(upstreamService, healthpb.HealthCheckResponse_NOT_SERVING)
}

// upstreamHealth is the "upstream" service's status for the keys'
// states, and why.
func upstreamHealth(keys []relay.KeyStatus) (healthpb.HealthCheckResponse_ServingStatus, string) {
	answered := false
	for _, k := range keys {
		if k.Err != nil {
			return healthpb.HealthCheckResponse_NOT_SERVING, fmt.Sprintf("the upstream of key %q fails: %v", k.Key, k.Err)
		}
		answered = answered || k.Connected
	}
	if !answered {
		return healthpb.HealthCheckResponse_NOT_SERVING, "no upstream has answered yet"
	}
	return healthpb.HealthCheckResponse_SERVING, "every upstream answers"
}

// pollHealth keeps the "upstream" service's status until ctx ends,
// logging each change.
func pollHealth(ctx context.Context, r *relay.Relay, hs *health.Server, log *slog.Logger) {
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	last := healthpb.HealthCheckResponse_NOT_SERVING
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, why := upstreamHealth(r.Status())
		if st == last {
			continue
		}
		last = st
		hs.SetServingStatus(upstreamService, st)
		if st == healthpb.HealthCheckResponse_SERVING {
			log.Info("xdsrelay: upstream healthy", "reason", why)
		} else {
			log.Warn("xdsrelay: upstream unhealthy; serving the last good configuration", "reason", why)
		}
	}
}
