package features_test

import (
	"testing"

	"github.com/xdsengine/xdsengine/features"
)

func TestSwitchesFromEnv(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want features.Switches
	}{
		{map[string]string{}, features.Switches{}},
		{map[string]string{features.EnvDataErrorHandling: "false"}, features.Switches{DisableDataErrorHandling: true}},
		{map[string]string{features.EnvFallback: "FALSE", features.EnvEndpointFallback: " false "}, features.Switches{DisableFallback: true, DisableEndpointFallback: true}},
		{map[string]string{features.EnvFallback: "0", features.EnvDataErrorHandling: "true"}, features.Switches{}},
	}
	for _, tc := range tests {
		for _, k := range []string{features.EnvFallback, features.EnvDataErrorHandling, features.EnvEndpointFallback} {
			t.Setenv(k, tc.env[k])
		}
		if got := features.SwitchesFromEnv(); got != tc.want {
			t.Errorf("SwitchesFromEnv() with %v = %+v, want %+v", tc.env, got, tc.want)
		}
	}
}
