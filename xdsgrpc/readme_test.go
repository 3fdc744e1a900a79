package xdsgrpc_test

import (
	"testing"

	"github.com/xdsengine/xdsengine/internal/testutil/readme"
)

// TestREADMESnippet: the README's xdsgrpc snippet is Go that parses,
// imports every package it uses and no other, and whose function is,
// word for word, the one Example runs.
func TestREADMESnippet(t *testing.T) {
	block := readme.Snippet(t, "../README.md", "## gRPC traffic")
	readme.CheckImports(t, block)
	readme.CheckFunc(t, block, "newChannel", "example_test.go")
}
