package endpoint_test

import (
	"testing"

	"github.com/xdsengine/xdsengine/types/endpoint"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHealthStatusUsable(t *testing.T) {
	tests := []struct {
		s    endpoint.HealthStatus
		name string
		want bool
	}{
		{endpoint.HealthUnknown, "UNKNOWN", true},
		{endpoint.HealthHealthy, "HEALTHY", true},
		{endpoint.HealthUnhealthy, "UNHEALTHY", false},
		{endpoint.HealthDraining, "DRAINING", false},
		{endpoint.HealthTimeout, "TIMEOUT", false},
		{endpoint.HealthDegraded, "DEGRADED", false},
		{endpoint.HealthStatus(-1), "HealthStatus(-1)", false},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.name {
			t.Errorf("String() = %q, want %q", got, tt.name)
		}
		if got := (endpoint.Endpoint{HealthStatus: tt.s}).Usable(); got != tt.want {
			t.Errorf("%s: Usable() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
