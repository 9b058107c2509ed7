package raftnode

import (
	"crypto/tls"
	"crypto/x509"
)

func x509Pool(certs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

func verifyOptions(cfg *tls.Config, intermediates *x509.CertPool) x509.VerifyOptions {
	return x509.VerifyOptions{
		Roots:         cfg.RootCAs,
		Intermediates: intermediates,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}
