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

// registerHealth serves health on s: "" SERVING, the relay being up (see
// the help text), and "upstream" as the relay's keys say, from the start.
func registerHealth(s *grpc.Server, hs *health.Server, r *relay.Relay, log *slog.Logger) healthpb.HealthCheckResponse_ServingStatus {
	healthpb.RegisterHealthServer(s, hs)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	st, why := upstreamHealth(r.Status())
	hs.SetServingStatus(upstreamService, st)
	logUpstreamHealth(log, st, why)
	return st
}

// upstreamHealth is the "upstream" service's status for the keys'
// states, and why. With no key, nothing is asked of the upstream, so
// nothing is known of it: UNKNOWN, which an alert on NOT_SERVING leaves
// alone, and which a readiness probe (a mistake, see the help text)
// fails as it would NOT_SERVING.
func upstreamHealth(keys []relay.KeyStatus) (healthpb.HealthCheckResponse_ServingStatus, string) {
	if len(keys) == 0 {
		return healthpb.HealthCheckResponse_UNKNOWN, "no client is subscribed, so nothing is asked of the upstream"
	}
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

func logUpstreamHealth(log *slog.Logger, st healthpb.HealthCheckResponse_ServingStatus, why string) {
	switch st {
	case healthpb.HealthCheckResponse_SERVING:
		log.Info("xdsrelay: upstream healthy", "health", st, "reason", why)
	case healthpb.HealthCheckResponse_UNKNOWN:
		log.Info("xdsrelay: upstream health unknown until a client subscribes", "health", st, "reason", why)
	default:
		log.Warn("xdsrelay: upstream unhealthy; serving the last good configuration", "health", st, "reason", why)
	}
}

// pollHealth keeps the "upstream" service's status until ctx ends,
// logging each change, and logs the upstream responses the relay
// rejects (NACKs), which leave the status as it is: the upstream answers,
// and its clients keep the last good version of what it rejected.
func pollHealth(ctx context.Context, r *relay.Relay, hs *health.Server, last healthpb.HealthCheckResponse_ServingStatus, log *slog.Logger) {
	t := time.NewTicker(healthInterval)
	defer t.Stop()
	nacks := map[string]int{} // by key, those logged
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		keys := r.Status()
		logNACKs(keys, nacks, log)
		st, why := upstreamHealth(keys)
		if st == last {
			continue
		}
		last = st
		hs.SetServingStatus(upstreamService, st)
		logUpstreamHealth(log, st, why)
	}
}

// logNACKs logs the keys whose upstream NACKs grew since logged.
func logNACKs(keys []relay.KeyStatus, logged map[string]int, log *slog.Logger) {
	live := make(map[string]bool, len(keys))
	for _, k := range keys {
		live[k.Key] = true
		if k.UpstreamNACKs < logged[k.Key] {
			logged[k.Key] = 0 // the key's engine was closed and made again
		}
		if k.UpstreamNACKs == logged[k.Key] {
			continue
		}
		log.Warn("xdsrelay: the relay rejected (NACKed) resources the upstream sent; their clients keep the last good version",
			"key", k.Key, "rejected", k.UpstreamNACKs-logged[k.Key], "total", k.UpstreamNACKs, "last", k.LastNACK, "at", k.LastNACKAt)
		logged[k.Key] = k.UpstreamNACKs
	}
	for key := range logged {
		if !live[key] {
			delete(logged, key)
		}
	}
}
