package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestUpdateThenCheck: an updated file passes its check, and a file that
// differs fails it.
func TestUpdateThenCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.go")
	Check(t, path, "package x\n", true, "")
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "package x\n" {
		t.Fatalf("after update: %q, %v", got, err)
	}
	Check(t, path, "package x\n", false, "")

	var rec recorder
	Check(&rec, path, "package y\n", false, "go generate")
	if len(rec.errors) != 1 {
		t.Fatalf("a file that differs: %d errors, want 1", len(rec.errors))
	}
}

// recorder is a TB that keeps the errors reported to it.
type recorder struct{ errors []string }

func (*recorder) Helper()             {}
func (r *recorder) Fatal(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
