// Package endpoint holds the endpoint types that EDS and LEDS resources
// share: [Endpoint], one validated backend, and its [HealthStatus].
//
// The types/eds and types/leds packages decode and validate
// envoy.config.endpoint.v3.LbEndpoint messages into these values (the
// same rules for both, as gRFC A95 asks), and name them eds.Endpoint and
// leds.Endpoint.
package endpoint
