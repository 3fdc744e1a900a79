package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// recorder is a TB that keeps what is reported to it; Fatal ends the
// check, as testing's does, by a panic the caller recovers.
type recorder struct{ errors []string }

type fatal struct{}

func (*recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.errors = append(r.errors, fmt.Sprint(args...))
	panic(fatal{})
}
func (r *recorder) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func run(f func(t TB)) (errors []string) {
	r := &recorder{}
	defer func() {
		if p := recover(); p != nil && p != (fatal{}) {
			panic(p)
		}
		errors = r.errors
	}()
	f(r)
	return r.errors
}

// TestChecks: each check passes a good snippet and names what is wrong
// with a bad one.
func TestChecks(t *testing.T) {
	dir := t.TempDir()
	readmePath := filepath.Join(dir, "README.md")
	src := filepath.Join(dir, "main.go")
	good := "import \"strings\"\n\n// upper is upper.\nfunc upper(s string) string { return strings.ToUpper(s) }\n"
	if err := os.WriteFile(readmePath, []byte("# x\n\n## Use\n\n```go\n"+good+"```\n\n## Next\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("package main\n\n"+good), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		check func(t TB)
		want  int // errors reported
	}{
		{"snippet found", func(t TB) {
			if Snippet(t, readmePath, "## Use") != good {
				t.Errorf("wrong block")
			}
		}, 0},
		{"no such section", func(t TB) { Snippet(t, readmePath, "## Other") }, 1},
		{"imports used", func(t TB) { CheckImports(t, good) }, 0},
		{"missing import", func(t TB) { CheckImports(t, "func f() string { return strings.ToUpper(\"a\") }\n") }, 1},
		{"unused import", func(t TB) { CheckImports(t, "import \"os\"\n\nfunc f() {}\n") }, 1},
		{"declared names are no packages", func(t TB) {
			CheckImports(t, "func f(b []int) int { for i, v := range b { _ = i.x; _ = v.y }; x := b; return len(x) }\n")
		}, 0},
		{"function is the file's", func(t TB) { CheckFunc(t, good, "upper", src) }, 0},
		{"function differs", func(t TB) { CheckFunc(t, "// upper is other.\nfunc upper() {}\n", "upper", src) }, 1},
		{"no such function", func(t TB) { CheckFunc(t, good, "lower", src) }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(tc.check); len(got) != tc.want {
				t.Errorf("reported %q, want %d errors", got, tc.want)
			}
		})
	}
}
