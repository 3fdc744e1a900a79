package lrs_test

import (
	"testing"

	"github.com/xdsengine/xdsengine/internal/testutil/readme"
)

// TestREADMESnippet: the README's load reporting snippet is Go that
// parses, imports every package it uses and no other, and whose function
// is, word for word, the one ExampleClient_ReportLoad_self runs (so it
// compiles and works).
func TestREADMESnippet(t *testing.T) {
	block := readme.Snippet(t, "../README.md", "## Load reporting (LRS)")
	readme.CheckImports(t, block)
	readme.CheckFunc(t, block, "reportLoad", "example_test.go")
}
