package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestVersionIn reads the module's version from build information as Go
// records it for each way a program can be built.
func TestVersionIn(t *testing.T) {
	dep := func(path, version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: version, Replace: replace}
	}
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"a command of this module, installed at a tag",
			debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.2.0"}}, "v0.2.0"},
		{"a command of this module, built in a work tree at a commit",
			debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.2.1-0.20260102150405-abcdefabcdef+dirty"}}, "v0.2.1-0.20260102150405-abcdefabcdef+dirty"},
		{"a command of this module, no version stamped",
			debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "(devel)"},
		{"a command of this module, version empty",
			debug.BuildInfo{Main: debug.Module{Path: modulePath}}, "(devel)"},
		{"a program that requires the module",
			debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v1.0.0"},
				Deps: []*debug.Module{dep("example.com/other", "v9.9.9", nil), dep(modulePath, "v0.3.0", nil)}}, "v0.3.0"},
		{"a program that replaces the module by a fork",
			debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
				Deps: []*debug.Module{dep(modulePath, "v0.3.0", dep("example.com/fork/xdsengine", "v0.3.1", nil))}}, "v0.3.1"},
		{"a program that replaces the module by a directory",
			debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
				Deps: []*debug.Module{dep(modulePath, "v0.3.0", dep("../xdsengine", "", nil))}}, "(devel)"},
		{"a program whose build information does not list the module",
			debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "v1.0.0"}}, "(devel)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionIn(&tt.bi); got != tt.want {
				t.Errorf("versionIn = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVersionIsThisBuilds: ModuleVersion is what this test binary's build
// information says, not a number written in the source.
func TestVersionIsThisBuilds(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("a test binary has build information")
	}
	if bi.Main.Path != modulePath {
		t.Fatalf("main module %q, want %q", bi.Main.Path, modulePath)
	}
	if got, want := ModuleVersion(), versionIn(bi); got != want {
		t.Errorf("ModuleVersion() = %q, want %q (main module version %q)", got, want, bi.Main.Version)
	}
	t.Logf("ModuleVersion() = %q", ModuleVersion())
}
