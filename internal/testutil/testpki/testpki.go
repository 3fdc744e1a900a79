package testpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	Pool    *x509.CertPool // holds only Cert
	key     crypto.Signer
}

// Leaf is a certificate issued by a CA, with its key.
type Leaf struct {
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
}

// NewCA makes a self-signed CA.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := template(t, name)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("testpki: CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testpki: parse CA certificate: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, CertPEM: pemBlock("CERTIFICATE", der), Pool: pool, key: key}
}

// Server issues a server certificate for hosts, each a DNS name or an IP
// address.
func (ca *CA) Server(t testing.TB, hosts ...string) Leaf {
	t.Helper()
	tmpl := template(t, hosts[0])
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return ca.issue(t, tmpl)
}

// Client issues a client certificate whose subject common name is name.
func (ca *CA) Client(t testing.TB, name string) Leaf {
	t.Helper()
	tmpl := template(t, name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(t, tmpl)
}

func (ca *CA) issue(t testing.TB, tmpl *x509.Certificate) Leaf {
	t.Helper()
	key := newKey(t)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		t.Fatalf("testpki: certificate for %s: %v", tmpl.Subject.CommonName, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testpki: marshal key: %v", err)
	}
	l := Leaf{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", pkcs8)}
	if l.TLS, err = tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
		t.Fatalf("testpki: key pair: %v", err)
	}
	return l
}

// WriteFile writes data to dir/name, replacing any earlier file by a
// rename so that a concurrent reader sees the old or the new content,
// never a mix, and returns the path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		t.Fatalf("testpki: %v", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		t.Fatalf("testpki: %v", err)
	}
	if err := tmp.Close(); err != nil {
		t.Fatalf("testpki: %v", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		t.Fatalf("testpki: %v", err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testpki: key: %v", err)
	}
	return key
}

func template(t testing.TB, name string) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatalf("testpki: serial: %v", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// ServiceAccountJSON returns a Google service account key file, as
// GOOGLE_APPLICATION_CREDENTIALS names, with a fresh RSA key and tokenURI
// as the OAuth token endpoint, so that Application Default Credentials
// resolve without Google's servers or a metadata server.
func ServiceAccountJSON(t testing.TB, tokenURI string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("testpki: RSA key: %v", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testpki: marshal key: %v", err)
	}
	data, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "test-project",
		"private_key_id": "test-key-id",
		"private_key":    string(pemBlock("PRIVATE KEY", pkcs8)),
		"client_email":   "test@test-project.iam.gserviceaccount.com",
		"client_id":      "123456789",
		"token_uri":      tokenURI,
	})
	if err != nil {
		t.Fatalf("testpki: %v", err)
	}
	return data
}
