package certprovider_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/certprovider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheck(t *testing.T) {
	known := registry.DecodeOptions{CertificateProviders: func(name string) bool { return name == "default" }}
	for _, c := range []struct {
		name    string
		opts    registry.DecodeOptions
		want    string
		wantErr bool
	}{
		{name: "default", opts: known},
		{name: "other", opts: known, wantErr: true,
			want: `f.instance_name: unrecognized certificate provider instance name "other": the bootstrap's certificate_providers does not define it`},
		{name: "other", opts: registry.DecodeOptions{}},
		// An empty name is the caller's to judge (a missing provider).
		{name: "", opts: known},
	} {
		var errs registry.FieldErrors
		certprovider.Check(c.opts, "f.instance_name", c.name, &errs)
		err := errs.Err()
		if (err != nil) != c.wantErr || c.wantErr && err.Error() != c.want {
			t.Errorf("Check(%q) = %v, want error %v %q", c.name, err, c.wantErr, c.want)
		}
	}
}
