package main

import (
	"testing"

	"github.com/xdsengine/xdsengine/internal/testutil/readme"
)

// TestREADMESnippet: the README's "Last-known-good configuration"
// snippet is Go that parses, imports every package it uses and no other,
// and whose function is, word for word, main.go's newEngine, which the
// example and its tests run.
func TestREADMESnippet(t *testing.T) {
	block := readme.Snippet(t, "../../README.md", "## Last-known-good configuration")
	readme.CheckImports(t, block)
	readme.CheckFunc(t, block, "newEngine", "main.go")
}
