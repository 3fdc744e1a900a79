package incode_test

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestREADMEShowsExample: the README's "In code" block is Example's body
// between the README markers, so the README cannot drift from code that
// runs.
func TestREADMEShowsExample(t *testing.T) {
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

	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "\t// README begin\n")
	body, _, _ = strings.Cut(body, "\t// README end\n")
	var want strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	if block != want.String() {
		t.Errorf("README's In code block differs from Example's body.\nREADME:\n%s\nExample:\n%s", block, want.String())
	}
}
