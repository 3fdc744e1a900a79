package engine

import "maps"

// certificateProviders tells the decoders which certificate provider
// instances the bootstrap defines (registry.DecodeOptions.CertificateProviders),
// or nil when Config.IgnoreCertificateProviders turns the check off. The
// names are copied: the streams' goroutines read them while decoding.
func certificateProviders(cfg Config) func(name string) bool {
	if cfg.IgnoreCertificateProviders {
		return nil
	}
	names := maps.Clone(cfg.Bootstrap.CertificateProviders)
	return func(name string) bool {
		_, ok := names[name]
		return ok
	}
}
