package main

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

// TestREADMESnippet: the README's "Last-known-good configuration"
// snippet is Go that parses, imports every package it uses and no other,
// and whose function is, word for word, main.go's newEngine, which the
// example and its tests run.
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Last-known-good configuration\n")
	if !ok {
		t.Fatal(`README.md has no section "Last-known-good configuration"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal("the README's Last-known-good section has no Go code block")
	}

	f, err := parser.ParseFile(token.NewFileSet(), "README.md", "package snippet\n\n"+block, parser.ParseComments)
	if err != nil {
		t.Fatalf("the README's snippet does not parse: %v", err)
	}
	imported := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		imported[path.Base(p)] = true
	}
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

	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(block, "\n// newEngine")
	if i < 0 {
		t.Fatal("the README's snippet has no newEngine")
	}
	if fn := block[i+1:]; !strings.Contains(string(src), fn) {
		t.Errorf("the README's newEngine is not main.go's:\n%s", fn)
	}
}
