package bootstrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Environment variables read by [FromEnv], the same ones gRPC reads.
const (
	// EnvFile names a file holding the bootstrap JSON. It takes
	// precedence over EnvConfig.
	EnvFile = "GRPC_XDS_BOOTSTRAP"
	// EnvConfig holds the bootstrap JSON itself.
	EnvConfig = "GRPC_XDS_BOOTSTRAP_CONFIG"
)

// ErrNotSet is returned (wrapped) by [FromEnv] when neither bootstrap
// variable is set, so that a caller can fall back to a configuration of
// its own.
var ErrNotSet = errors.New("bootstrap: neither " + EnvFile + " (a file path) nor " + EnvConfig + " (inline JSON) is set")

// FromEnv reads the bootstrap the way gRPC does, with the default
// credential types: see [Parser.FromEnv].
func FromEnv() (*Bootstrap, error) { return Parser{}.FromEnv() }

// FromEnv reads the bootstrap the way gRPC does: from the file named by
// GRPC_XDS_BOOTSTRAP if that is set, else from the JSON in
// GRPC_XDS_BOOTSTRAP_CONFIG. An empty variable counts as unset. If neither
// is set the error wraps [ErrNotSet]; an unreadable file gives an error
// naming the file and the variable.
func (p Parser) FromEnv() (*Bootstrap, error) {
	if path := os.Getenv(EnvFile); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			// The PathError repeats the path and says "open"; unwrap it
			// so the message names the path once, with the variable.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("bootstrap: reading file %q named by %s: %w", path, EnvFile, err)
		}
		b, err := p.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s file %q: %w", EnvFile, path, err)
		}
		return b, nil
	}
	if config := os.Getenv(EnvConfig); config != "" {
		b, err := p.Parse([]byte(config))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvConfig, err)
		}
		return b, nil
	}
	return nil, ErrNotSet
}
