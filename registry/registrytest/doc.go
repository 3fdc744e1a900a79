// Package registrytest is the conformance kit for authors of resource
// types. Run it from a test of the type's package:
//
//	func TestConformance(t *testing.T) {
//		registrytest.Run(t, mytype.Type, []registrytest.Case{
//			{Name: "valid", Message: goodProto, WantName: "a"},
//			{Name: "no port", Message: badProto, WantName: "b", WantErr: "port"},
//		})
//	}
//
// [Run] checks that the descriptor registers; that each case decodes to
// the wanted name, even when it fails validation (so that NACKs name the
// resource), and that the type's NameField holds that name; that decoding is deterministic; that an [registry.Equaler]
// is reflexive; that dependencies are well formed; and that the decoder
// returns an error rather than panicking on truncated, bit-flipped and
// random bytes.
package registrytest
