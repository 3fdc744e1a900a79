// Package incode keeps the README's "In code" snippet true: the snippet is
// the body of this package's Example, which runs against an embedded
// management server, and a test checks that the README shows exactly that
// code.
package incode
