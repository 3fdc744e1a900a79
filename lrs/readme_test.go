package lrs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"strconv"
	"strings"
	"testing"
)

// TestREADMESnippet: the README's load reporting snippet is Go that
// parses, imports every package it names, and whose function is, word
// for word, the one ExampleClient_ReportLoad_self runs (so it compiles
// and works).
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(readme)[strings.Index(string(readme), "## Load reporting (LRS)\n"):], "## Load reporting (LRS)\n")
	if !ok {
		t.Fatal("README.md has no section \"Load reporting (LRS)\"")
	}
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed || strings.Contains(block, "\n## ") {
		t.Fatal("the README's LRS section has no Go code block")
	}

	src := "package snippet\n\n" + block
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "README.md", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("the README's LRS snippet does not parse: %v", err)
	}
	// Names the snippet declares, or imports; any other name it
	// qualifies a selector with is a package it forgot to import.
	known := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		known[path.Base(p)] = true
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			for _, id := range n.Names {
				known[id.Name] = true
			}
		case *ast.AssignStmt:
			for _, e := range n.Lhs {
				if id, ok := e.(*ast.Ident); ok && n.Tok == token.DEFINE {
					known[id.Name] = true
				}
			}
		case *ast.RangeStmt:
			for _, e := range []ast.Expr{n.Key, n.Value} {
				if id, ok := e.(*ast.Ident); ok {
					known[id.Name] = true
				}
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && !known[id.Name] {
				t.Errorf("the snippet uses %s.%s but does not import %s", id.Name, sel.Sel.Name, id.Name)
			}
		}
		return true
	})

	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := block[strings.Index(block, "\n// reportLoad")+1:]
	if !strings.Contains(string(example), fn) {
		t.Errorf("the README's reportLoad is not the one in example_test.go:\n%s", fn)
	}
}
