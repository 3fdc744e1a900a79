package features_test

import (
	"fmt"
	"os"
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

// ExampleSwitchesFromEnv: gRPC's environment guards, read the way gRPC
// reads them. An engine reads them itself when its Config leaves Switches
// nil; pinning them in the Config makes a program independent of its
// environment.
func ExampleSwitchesFromEnv() {
	os.Setenv(features.EnvEndpointFallback, "false")
	defer os.Unsetenv(features.EnvEndpointFallback)
	fmt.Printf("%+v\n", features.SwitchesFromEnv())
	// Output: {DisableFallback:false DisableDataErrorHandling:false DisableEndpointFallback:true}
}
