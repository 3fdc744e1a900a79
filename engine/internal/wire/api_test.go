package wire_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeamIsNarrow holds the seam between the engine and the stream to
// what the design promises: Host and Stream are interfaces; in the
// package's exported API no empty interface (any) and no mutex, so that
// no opaque handle or lock crosses it, and nothing named "…Locked", since
// no caller holds a lock the other side knows of. (The counts of their
// methods it once held are withdrawn: a method per thing the stream tells
// the engine reads better than one that means several.)
// registry.Resource, the decoded value every resource type defines, is
// the one interface without methods it carries: it is named, and the
// values are the engine's to hand to watchers.
func TestSeamIsNarrow(t *testing.T) {
	pkg := typeCheck(t)
	scope := pkg.Scope()
	for _, name := range []string{"Host", "Stream"} {
		obj := scope.Lookup(name)
		if obj == nil {
			t.Fatalf("wire.%s is gone", name)
		}
		if _, ok := obj.Type().Underlying().(*types.Interface); !ok {
			t.Fatalf("wire.%s is %s, want an interface", name, obj.Type().Underlying())
		}
	}
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		checkName(t, name)
		switch obj := obj.(type) {
		case *types.TypeName:
			checkType(t, name, obj.Type().Underlying(), map[types.Type]bool{})
			named, ok := obj.Type().(*types.Named)
			if !ok {
				continue
			}
			for i := 0; i < named.NumMethods(); i++ {
				if m := named.Method(i); m.Exported() {
					checkName(t, name+"."+m.Name())
					checkType(t, name+"."+m.Name(), m.Type(), map[types.Type]bool{})
				}
			}
		default:
			checkType(t, name, obj.Type(), map[types.Type]bool{})
		}
	}
}

func checkName(t *testing.T, name string) {
	t.Helper()
	if strings.HasSuffix(name, "Locked") || strings.Contains(name, "Lock") || strings.Contains(name, "Mutex") {
		t.Errorf("wire's API has %s: a lock is no part of the seam", name)
	}
}

// checkType reports an empty interface that is not a named type of
// another package, and any lock, reachable through the exported parts of
// typ.
func checkType(t *testing.T, where string, typ types.Type, seen map[types.Type]bool) {
	t.Helper()
	if seen[typ] {
		return
	}
	seen[typ] = true
	switch typ := typ.(type) {
	case *types.Named:
		path := ""
		if p := typ.Obj().Pkg(); p != nil {
			path = p.Path()
		}
		if path == "sync" && (typ.Obj().Name() == "Locker" || strings.Contains(typ.Obj().Name(), "Mutex")) {
			t.Errorf("%s: carries a %s", where, typ)
			return
		}
		if path != "" && path != "github.com/xdsengine/xdsengine/engine/internal/wire" {
			return // another package's own type
		}
		checkType(t, where, typ.Underlying(), seen)
	case *types.Alias:
		checkType(t, where, types.Unalias(typ), seen)
	case *types.Interface:
		if typ.Empty() {
			t.Errorf("%s: carries an empty interface (any)", where)
		}
	case *types.Pointer:
		checkType(t, where, typ.Elem(), seen)
	case *types.Slice:
		checkType(t, where, typ.Elem(), seen)
	case *types.Map:
		checkType(t, where, typ.Key(), seen)
		checkType(t, where, typ.Elem(), seen)
	case *types.Chan:
		checkType(t, where, typ.Elem(), seen)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{typ.Params(), typ.Results()} {
			for i := 0; i < tuple.Len(); i++ {
				checkType(t, where, tuple.At(i).Type(), seen)
			}
		}
	case *types.Struct:
		for i := 0; i < typ.NumFields(); i++ {
			if f := typ.Field(i); f.Exported() {
				checkName(t, where+"."+f.Name())
				checkType(t, where+"."+f.Name(), f.Type(), seen)
			}
		}
	}
}

// typeCheck type-checks the package's non-test files against the export
// data of its dependencies, as go list -export builds them.
func typeCheck(t *testing.T) *types.Package {
	t.Helper()
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, af)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check("github.com/xdsengine/xdsengine/engine/internal/wire", fset, parsed, nil)
	if err != nil {
		t.Fatalf("type-checking the package: %v", err)
	}
	return pkg
}
