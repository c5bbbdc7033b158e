package redisserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// A TLSServer is a redis-server that also serves TLS, with certificates from
// a throwaway certificate authority made for it.
type TLSServer struct {
	*Server
	// TLSAddr is the "127.0.0.1:port" address of the TLS port.
	TLSAddr string
	// CAFile is the authority's certificate (PEM); CertFile and KeyFile are a
	// client certificate and key it signed, for mutual TLS.
	CAFile, CertFile, KeyFile string
	// Roots holds the authority, for a client's tls.Config.
	Roots *x509.CertPool

	certs string // the directory of the files above
}

// StartTLS starts a redis-server with a TLS port besides its plain one (the
// plain port serves readiness checks). Clients must trust CAFile; a client
// certificate is accepted but not required.
func StartTLS() (*TLSServer, error) {
	dir, err := os.MkdirTemp("", "redistest-tls-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	s := &TLSServer{certs: dir, CAFile: filepath.Join(dir, "ca.crt"),
		CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key")}
	serverCert, serverKey := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := s.makeCerts(serverCert, serverKey); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.Server, err = StartServer("--tls-port", strconv.Itoa(port), "--tls-cert-file", serverCert,
		"--tls-key-file", serverKey, "--tls-ca-cert-file", s.CAFile, "--tls-auth-clients", "optional")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.TLSAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return s, nil
}

// Stop stops the server and removes its certificates.
func (s *TLSServer) Stop() error {
	return errors.Join(s.Server.Stop(), os.RemoveAll(s.certs))
}

// TLSConfig returns a client configuration that trusts the authority.
func (s *TLSServer) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.Roots, MinVersion: tls.VersionTLS12}
}

// makeCerts makes the authority, the server's certificate for 127.0.0.1 and
// localhost, and a client certificate, and writes them as PEM files.
func (s *TLSServer) makeCerts(serverCert, serverKey string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redisync test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	s.Roots = x509.NewCertPool()
	s.Roots.AddCert(ca)
	if err := writePEM(s.CAFile, "CERTIFICATE", caDER); err != nil {
		return err
	}
	leaf := func(serial int64, usage x509.ExtKeyUsage, certFile, keyFile string) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("redisserver: %w", err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: "127.0.0.1"},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("redisserver: %w", err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return fmt.Errorf("redisserver: %w", err)
		}
		return errors.Join(writePEM(certFile, "CERTIFICATE", der), writePEM(keyFile, "EC PRIVATE KEY", keyDER))
	}
	return errors.Join(leaf(2, x509.ExtKeyUsageServerAuth, serverCert, serverKey),
		leaf(3, x509.ExtKeyUsageClientAuth, s.CertFile, s.KeyFile))
}

// writePEM writes one PEM block of type kind to file.
func writePEM(file, kind string, der []byte) error {
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	return nil
}
