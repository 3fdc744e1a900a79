package features

import (
	"os"
	"strings"
)

// Switches are gRPC's temporary environment variable guards. Each feature
// is on unless its switch is set. An engine takes them from its Config
// (the environment when that leaves them unset) and hands them to every
// decision that depends on them, resource types included, so one value
// decides everywhere.
type Switches struct {
	// DisableFallback: GRPC_EXPERIMENTAL_XDS_FALLBACK=false; only the
	// first server of each list is used (gRFC A71).
	DisableFallback bool
	// DisableDataErrorHandling: GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false;
	// TP3 errors are ignored, fail_on_data_errors and
	// resource_timer_is_transient_error have no effect, and LDS/CDS
	// deletions drop the cached resource unless ignore_resource_deletion
	// is set (behaviour before gRFC A88).
	DisableDataErrorHandling bool
	// DisableEndpointFallback: GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=false;
	// fallback_on_reachability_only is ignored, resource types that
	// belong to gRFC A95 (LEDS) are switched off, so their client
	// features are not advertised, and EDS ignores
	// leds_cluster_locality_config.
	DisableEndpointFallback bool
}

// Environment variable names read by [SwitchesFromEnv].
const (
	EnvFallback          = "GRPC_EXPERIMENTAL_XDS_FALLBACK"
	EnvDataErrorHandling = "GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING"
	EnvEndpointFallback  = "GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK"
)

// SwitchesFromEnv reads the switches from the environment: a variable
// disables its feature only when it is "false" (any case).
func SwitchesFromEnv() Switches {
	off := func(name string) bool { return strings.EqualFold(strings.TrimSpace(os.Getenv(name)), "false") }
	return Switches{
		DisableFallback:          off(EnvFallback),
		DisableDataErrorHandling: off(EnvDataErrorHandling),
		DisableEndpointFallback:  off(EnvEndpointFallback),
	}
}
