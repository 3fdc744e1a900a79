// Package features holds xDS server features as pluggable policies.
//
// A server feature is a string in the "server_features" list of an xDS
// server in the bootstrap file (gRFC A27, A71, A88). In this package a
// feature is a value implementing [ServerFeature]; it may also implement
// one or more optional hook interfaces that the engine consults at its
// decision points:
//
//   - [ErrorPolicy]: keep or drop a cached resource when a data error
//     arrives for it (NACK, LDS/CDS deletion, xRFC TP3 NOT_FOUND or
//     PERMISSION_DENIED). The built-in fail_on_data_errors drops.
//   - [TimerPolicy]: how long the does-not-exist timer runs and whether
//     its expiry is a transient error (UNAVAILABLE, state TIMEOUT) or a
//     data error (NOT_FOUND, state DOES_NOT_EXIST). The built-in
//     resource_timer_is_transient_error makes it 30 s and transient.
//
// The engine computes gRPC's default decision and then folds the hooks of
// a server's features over it in bootstrap order (see [Set.ErrorAction] and
// [Set.ResourceTimer]); each hook sees the decision so far and returns a new
// one. Feature names the engine does not know are ignored, as the
// bootstrap format requires.
//
// # Writing a feature
//
// A feature is usually a small struct or a [Func]-style value:
//
//	type failNACKsOnly struct{}
//
//	func (failNACKsOnly) Name() string { return "example.com/fail_on_nack" }
//	func (failNACKsOnly) ErrorAction(ev features.ErrorEvent, def features.Action) features.Action {
//		if ev.Reason == features.ReasonNACK {
//			return features.Drop
//		}
//		return def
//	}
//
// and is handed to the engine in its configuration, which resolves the
// bootstrap's strings against the built-in features and the user's own
// (the user's win on a name clash).
//
// Hooks are called with the engine's state lock held: they must be quick,
// must not block and must not call back into the engine.
package features
