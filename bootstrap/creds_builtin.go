package bootstrap

import (
	"encoding/json"
	"errors"
	"os"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/google"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/credentials/jwt"

	"github.com/xdsengine/xdsengine/registry"
)

// insecureType is plaintext; gRPC ignores its config.
var insecureType = ChannelCredsType{
	Name:     "insecure",
	Insecure: true,
	Build: func(json.RawMessage) (BuiltCreds, error) {
		return BuiltCreds{Transport: insecure.NewCredentials()}, nil
	},
}

// googleDefaultType is gRPC's Google default credentials; gRPC ignores its
// config.
var googleDefaultType = ChannelCredsType{Name: "google_default", Build: buildGoogleDefault}

// jwtTokenFileType is the "jwt_token_file" call credentials (gRFC A97).
var jwtTokenFileType = CallCredsType{
	Name:     "jwt_token_file",
	Validate: func(c json.RawMessage) []*registry.FieldError { _, errs := parseJWTTokenFile(c); return errs },
	Check:    checkJWTTokenFile,
	Build:    buildJWTTokenFile,
}

// buildGoogleDefault makes gRPC's Google default credentials: TLS with
// the system's roots (ALTS only toward DirectPath backends, which an xDS
// server is not) and OAuth tokens from Application Default Credentials.
// Off Google Cloud, without ADC, gRPC logs a warning and sends no token,
// as it does for its own xDS channels.
func buildGoogleDefault(json.RawMessage) (BuiltCreds, error) {
	b := google.NewDefaultCredentials()
	if b == nil || b.TransportCredentials() == nil {
		return BuiltCreds{}, errors.New("google_default: gRPC built no credentials")
	}
	built := BuiltCreds{Transport: b.TransportCredentials()}
	if pc := b.PerRPCCredentials(); pc != nil {
		built.PerRPC = []credentials.PerRPCCredentials{pc}
	}
	return built, nil
}

// parseJWTTokenFile validates a jwt_token_file config (gRFC A97):
// "jwt_token_file" is required.
func parseJWTTokenFile(config json.RawMessage) (string, []*registry.FieldError) {
	m, errs := configFields(config)
	if errs != nil {
		return "", errs
	}
	path := stringField(m, "jwt_token_file", &errs)
	if errs == nil && path == "" {
		errs = append(errs, fieldErrorf("jwt_token_file", "is required"))
	}
	return path, errs
}

// checkJWTTokenFile only reads the file, without judging the token: it may
// expire and be replaced at any time, and gRPC reads the file again as
// needed.
func checkJWTTokenFile(config json.RawMessage) []*registry.FieldError {
	path, errs := parseJWTTokenFile(config)
	if errs != nil {
		return errs
	}
	if _, err := os.ReadFile(path); err != nil {
		return []*registry.FieldError{{Field: "jwt_token_file", Err: err}}
	}
	return nil
}

func buildJWTTokenFile(config json.RawMessage) (credentials.PerRPCCredentials, error) {
	path, errs := parseJWTTokenFile(config)
	if errs != nil {
		return nil, registry.FieldWithin("config", errs[0])
	}
	return jwt.NewTokenFileCallCredentials(path)
}
