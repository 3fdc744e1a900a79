package main

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEShowsMain: the README's "In code" block is main.go as it is,
// imports included, so the README cannot drift from the program the
// tests run.
func TestREADMEShowsMain(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, afterHeading, ok := strings.Cut(string(readme), "\n## In code\n")
	if !ok {
		t.Fatal(`README has no "## In code" section`)
	}
	_, block, ok := strings.Cut(afterHeading, "```go\n")
	if !ok {
		t.Fatal(`README's "In code" section has no go block`)
	}
	block, _, _ = strings.Cut(block, "```")

	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if block != string(src) {
		t.Errorf("README's In code block differs from main.go.\nREADME:\n%s\nmain.go:\n%s", block, src)
	}
}
