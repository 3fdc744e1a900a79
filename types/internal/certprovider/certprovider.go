// Package certprovider checks the certificate provider instances that
// Clusters and Listeners name against the bootstrap (gRFC A29), the same
// way in every resource type.
package certprovider

import "github.com/xdsengine/xdsengine/registry"

// Check reports in errs, under field, an instance name the bootstrap
// does not define. It checks nothing when opts carries no bootstrap
// lookup, and leaves an empty name to the caller's own rules.
func Check(opts registry.DecodeOptions, field, name string, errs *registry.FieldErrors) {
	if opts.CertificateProviders == nil || name == "" || opts.CertificateProviders(name) {
		return
	}
	errs.Addf(field, "unrecognized certificate provider instance name %q: the bootstrap's certificate_providers does not define it", name)
}
