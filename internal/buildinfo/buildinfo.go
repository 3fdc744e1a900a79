// Package buildinfo reads the version of the xdsengine module from a
// program's build information.
package buildinfo

import (
	"runtime/debug"
	"slices"
)

// modulePath is the path of the module the engine belongs to.
const modulePath = "github.com/xdsengine/xdsengine"

// ModuleVersion is the version of the xdsengine module the program was
// built with, read once from its build information (see engine.Version).
func ModuleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return versionIn(bi)
}

// versionIn finds the module's version in a program's build information:
// the main module's when the module is the program's own, else its entry
// among the dependencies, replacement included.
func versionIn(bi *debug.BuildInfo) string {
	m := &bi.Main
	if m.Path != modulePath {
		i := slices.IndexFunc(bi.Deps, func(d *debug.Module) bool { return d.Path == modulePath })
		if i < 0 {
			return "(devel)"
		}
		m = bi.Deps[i]
	}
	if m.Replace != nil {
		m = m.Replace
	}
	if m.Version == "" {
		return "(devel)"
	}
	return m.Version
}
