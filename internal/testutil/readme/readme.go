// Package readme checks the Go snippets of the README: that a section's
// code block parses and imports what it uses, so that a user who copies
// it gets a program that compiles once its function is placed in one.
package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"strconv"
	"strings"
)

// TB is the part of testing.TB that the checks use.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Snippet returns the first Go code block of the README section headed
// heading ("## …"), from the README at readmePath.
func Snippet(t TB, readmePath, heading string) string {
	t.Helper()
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", readmePath, heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatalf("the README's section %q has no Go code block", heading)
	}
	return block
}

// CheckImports parses block as the body of a Go file and reports each
// package it uses without importing it, and each import it does not use.
func CheckImports(t TB, block string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "README.md", "package snippet\n\n"+block, parser.ParseComments)
	if err != nil {
		t.Fatalf("the README's snippet does not parse: %v", err)
	}
	imported := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		imported[path.Base(p)] = true
	}
	// Names the snippet declares: a selector on one is no package.
	declared := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			for _, id := range n.Names {
				declared[id.Name] = true
			}
		case *ast.AssignStmt:
			for _, e := range n.Lhs {
				if id, ok := e.(*ast.Ident); ok && n.Tok == token.DEFINE {
					declared[id.Name] = true
				}
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok {
					declared[id.Name] = true
				}
			}
		}
		return true
	})
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && !declared[id.Name] {
				used[id.Name] = true
				if !imported[id.Name] {
					t.Errorf("the snippet uses %s.%s but does not import %s", id.Name, sel.Sel.Name, id.Name)
				}
			}
		}
		return true
	})
	for name := range imported {
		if !used[name] {
			t.Errorf("the snippet imports %s and does not use it", name)
		}
	}
}

// CheckFunc reports whether the snippet's text from the comment that
// begins "// name" to its end is, word for word, in the file at srcPath.
func CheckFunc(t TB, block, name, srcPath string) {
	t.Helper()
	src, err := os.ReadFile(srcPath)
	if err != nil {
		t.Fatal(err)
	}
	block = "\n" + block
	i := strings.Index(block, "\n// "+name)
	if i < 0 {
		t.Fatalf("the README's snippet has no %s", name)
	}
	if fn := block[i+1:]; !strings.Contains(string(src), fn) {
		t.Errorf("the README's %s is not %s's:\n%s", name, srcPath, fn)
	}
}
