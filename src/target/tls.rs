//! `target --tls`: certificates (a CA made at start that signs the server's certificate, or the
//! user's own), the rustls server configuration, and the TLS faults, which act during the
//! handshake, before any request exists (hence a flag, not a `/fault/` route).
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// What a TLS connection of the target does instead of a proper handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TlsFault {
    /// Accept TCP, read the ClientHello, never answer it.
    Stall,
    /// Read the ClientHello, then close the connection.
    Close,
    /// Present a certificate that expired (signed by the same CA).
    Expired,
    /// Present a certificate for another name (signed by the same CA).
    WrongName,
}

impl TlsFault {
    pub const ALL: [TlsFault; 4] = [
        TlsFault::Stall,
        TlsFault::Close,
        TlsFault::Expired,
        TlsFault::WrongName,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TlsFault::Stall => "stall",
            TlsFault::Close => "close",
            TlsFault::Expired => "expired",
            TlsFault::WrongName => "wrong-name",
        }
    }
}

impl fmt::Display for TlsFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TlsFault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|f| f.name()).collect();
                format!("unknown TLS fault '{s}' (one of: {})", names.join(", "))
            })
    }
}

/// The target's TLS identity.
#[derive(Clone, PartialEq, Eq)]
pub struct TargetTls {
    /// The server's certificate chain, PEM.
    pub cert_pem: String,
    pub key_pem: String,
    /// The CA that signed a generated certificate (what clients pass as `--cacert`); None
    /// for the user's own certificate.
    pub ca_pem: Option<String>,
    pub fault: Option<TlsFault>,
}

impl fmt::Debug for TargetTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print a private key.
        f.debug_struct("TargetTls")
            .field("generated", &self.ca_pem.is_some())
            .field("fault", &self.fault)
            .finish_non_exhaustive()
    }
}

/// The names a generated certificate is valid for: how loopback is reached, and the stack
/// side of an `overload lab netem` path (lab::netem::STACK_ADDR), where a target or a lab
/// stack is reached across the impaired path.
pub const NAMES: [&str; 4] = ["localhost", "127.0.0.1", "::1", "10.77.0.2"];

fn cert_err(e: rcgen::Error) -> String {
    format!("cannot make a certificate: {e}")
}

impl TargetTls {
    /// A fresh CA and a server certificate it signs, for localhost, 127.0.0.1 and ::1 (an
    /// expired or wrong-name one for those faults). Made at each start: nothing to keep.
    pub fn generate(fault: Option<TlsFault>) -> Result<TargetTls, String> {
        let ca_key = KeyPair::generate().map_err(cert_err)?;
        let mut ca = CertificateParams::default();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "overload target CA");
        let ca_cert = ca.self_signed(&ca_key).map_err(cert_err)?;
        let names: Vec<String> = match fault {
            Some(TlsFault::WrongName) => vec!["wrong-name.invalid".into()],
            _ => NAMES.iter().map(|s| s.to_string()).collect(),
        };
        // rcgen makes IP SANs of the names that parse as IP addresses.
        let mut leaf = CertificateParams::new(names).map_err(cert_err)?;
        leaf.distinguished_name
            .push(DnType::CommonName, "overload target");
        if fault == Some(TlsFault::Expired) {
            leaf.not_before = rcgen::date_time_ymd(2000, 1, 1);
            leaf.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let leaf_key = KeyPair::generate().map_err(cert_err)?;
        let issuer = Issuer::from_params(&ca, &ca_key);
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(cert_err)?;
        Ok(TargetTls {
            cert_pem: leaf_cert.pem(),
            key_pem: leaf_key.serialize_pem(),
            ca_pem: Some(ca_cert.pem()),
            fault,
        })
    }

    /// The server configuration over TCP: HTTP/2 and HTTP/1.1 offered through ALPN.
    pub(crate) fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, String> {
        let mut cfg = self.rustls_config(rustls::DEFAULT_VERSIONS)?;
        // Both protocols, HTTP/2 preferred as servers do: a client offering h2 gets it.
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(cfg))
    }

    /// The configuration of the HTTP/3 side: the same certificate, TLS 1.3 only (QUIC has no
    /// other) and ALPN `h3`.
    pub(crate) fn quic_config(&self) -> Result<rustls::ServerConfig, String> {
        let mut cfg = self.rustls_config(&[&rustls::version::TLS13])?;
        cfg.alpn_protocols = vec![b"h3".to_vec()];
        // QUIC's 0-RTT would let a replayed request be served twice; the target offers
        // resumption (tickets) but not early data.
        cfg.max_early_data_size = 0;
        Ok(cfg)
    }

    fn rustls_config(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> Result<rustls::ServerConfig, String> {
        let chain = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("--cert: not a PEM certificate file ({e})"))?;
        if chain.is_empty() {
            return Err("--cert: no certificate in the file".into());
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| format!("--key: no usable private key ({e})"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| format!("--cert/--key: {e}"))
    }
}

/// A client that never finishes its handshake is dropped after this long.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Plays a handshake-time fault on a fresh connection: stall or close. Returns false when the
/// fault is not one of those (the handshake goes on, with the fault's certificate).
pub(crate) async fn play(fault: Option<TlsFault>, stream: &mut TcpStream) -> bool {
    let mut hello = [0u8; 2048];
    match fault {
        Some(TlsFault::Stall) => {
            // Hold the connection, say nothing, until the client gives up.
            while let Ok(n) = stream.read(&mut hello).await {
                if n == 0 {
                    break;
                }
            }
            true
        }
        Some(TlsFault::Close) => {
            let _ = stream.read(&mut hello).await;
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_identities_make_server_configs() {
        for fault in [None, Some(TlsFault::Expired), Some(TlsFault::WrongName)] {
            let t = TargetTls::generate(fault).unwrap();
            assert!(t.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
            assert!(t.ca_pem.is_some());
            t.server_config().unwrap();
            assert_eq!(t.quic_config().unwrap().alpn_protocols, [b"h3".to_vec()]);
            assert!(!format!("{t:?}").contains("PRIVATE"));
        }
        let bad = TargetTls {
            key_pem: "not a key".into(),
            ..TargetTls::generate(None).unwrap()
        };
        assert!(bad.server_config().unwrap_err().contains("--key"));
    }

    #[test]
    fn fault_names_round_trip() {
        for f in TlsFault::ALL {
            assert_eq!(f.name().parse::<TlsFault>(), Ok(f));
        }
        assert!("nope"
            .parse::<TlsFault>()
            .unwrap_err()
            .contains("wrong-name"));
    }
}
