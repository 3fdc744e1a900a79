package features_test

import (
	"fmt"

	"github.com/xdsengine/xdsengine/features"
)

// ExampleBuiltin resolves a server's "server_features" against the
// features gRPC defines, as an engine does for each server of its
// bootstrap, and shows what two of them change (gRFC A88): the
// does-not-exist timer becomes 30 s and transient, and a data error drops
// the cached resource instead of keeping it.
func ExampleBuiltin() {
	for _, f := range features.Builtin() {
		fmt.Println("known:", f.Name())
	}

	bootstrapNames := []string{"xds_v3", "fail_on_data_errors", "resource_timer_is_transient_error"}
	set := features.Resolve(bootstrapNames, features.Builtin()...)
	fmt.Println("resolved:", set.Names()) // xds_v3 is not a feature gRPC defines

	nack := features.ErrorEvent{Class: features.DataError, Reason: features.ReasonNACK}
	fmt.Printf("timer %+v, NACK of a cached resource: %v\n", set.ResourceTimer(features.DefaultTimer), set.ErrorAction(nack, features.Keep))
	none := features.Resolve(nil, features.Builtin()...)
	fmt.Printf("without them: timer %+v, NACK of a cached resource: %v\n", none.ResourceTimer(features.DefaultTimer), none.ErrorAction(nack, features.Keep))
	// Output:
	// known: fail_on_data_errors
	// known: resource_timer_is_transient_error
	// known: ignore_resource_deletion
	// known: trusted_xds_server
	// resolved: [fail_on_data_errors resource_timer_is_transient_error]
	// timer {Timeout:30s Transient:true}, NACK of a cached resource: drop
	// without them: timer {Timeout:15s Transient:false}, NACK of a cached resource: keep
}

// ExampleLegacyBuiltin shows the features as gRPC read them before gRFC
// A88, which an engine uses when GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING
// is false. Before A88 a response that deleted a Listener or Cluster
// dropped it, and a NACK kept the cached version: those are the defaults
// the features are folded over. ignore_resource_deletion then keeps the
// deleted resource (gRFC A53), and fail_on_data_errors is recognized but
// does nothing, where with A88 (Builtin, whose default is to keep) it
// drops the resource on either error.
func ExampleLegacyBuiltin() {
	deletion := features.ErrorEvent{Class: features.DataError, Reason: features.ReasonDeletion}
	nack := features.ErrorEvent{Class: features.DataError, Reason: features.ReasonNACK}
	show := func(mode string, known []features.ServerFeature, serverFeatures []string, deletionDefault, nackDefault features.Action) {
		set := features.Resolve(serverFeatures, known...)
		fmt.Printf("%s %v: deletion %v, NACK %v\n", mode, set.Names(), set.ErrorAction(deletion, deletionDefault), set.ErrorAction(nack, nackDefault))
	}
	for _, names := range [][]string{nil, {"ignore_resource_deletion"}, {"fail_on_data_errors"}} {
		show("legacy", features.LegacyBuiltin(), names, features.Drop, features.Keep)
	}
	show("A88", features.Builtin(), []string{"fail_on_data_errors"}, features.Keep, features.Keep)
	// Output:
	// legacy []: deletion drop, NACK keep
	// legacy [ignore_resource_deletion]: deletion keep, NACK keep
	// legacy [fail_on_data_errors]: deletion drop, NACK keep
	// A88 [fail_on_data_errors]: deletion drop, NACK drop
}

// ExampleNamed declares a server feature of the program's own that needs
// no hook: a name that, listed in a server's "server_features", a
// resource type's validator checks with Set.Has (it finds the set in
// registry.DecodeOptions.Server.Features). A name that is not declared is
// dropped when the bootstrap is resolved, as gRPC ignores the names it
// does not know, so the validator would never see it.
func ExampleNamed() {
	const strict = "example.com/strict_names"
	ours := []features.ServerFeature{features.Named(strict)} // engine.Config.Features

	bootstrapNames := []string{"fail_on_data_errors", strict}
	withOurs := features.Resolve(bootstrapNames, append(features.Builtin(), ours...)...)
	withoutOurs := features.Resolve(bootstrapNames, features.Builtin()...)
	fmt.Println(withOurs.Names(), withOurs.Has(strict))
	fmt.Println(withoutOurs.Names(), withoutOurs.Has(strict))

	// A named feature has no hooks: it changes no engine decision.
	nack := features.ErrorEvent{Class: features.DataError, Reason: features.ReasonNACK}
	only := features.Set(ours)
	fmt.Println(only.ErrorAction(nack, features.Keep), only.ResourceTimer(features.DefaultTimer) == features.DefaultTimer)
	// Output:
	// [fail_on_data_errors example.com/strict_names] true
	// [fail_on_data_errors] false
	// keep true
}
