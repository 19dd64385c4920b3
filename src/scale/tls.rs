//! The control channel's TLS: the agent's identity (a self-signed certificate made at start,
//! or the owner's PEM files), its SHA-256 fingerprint, and the controller's client, which
//! either pins that fingerprint or verifies the certificate against a CA file.
use crate::engine::tls::{CertPolicy, Verifier};
use rustls::client::danger::ServerCertVerified;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::sync::Arc;

/// PEM files are small; a cap keeps a wrong path from filling memory.
const MAX_PEM: u64 = 1 << 20;

/// The agent's server configuration and its certificate's fingerprint.
pub struct Identity {
    pub config: Arc<rustls::ServerConfig>,
    /// SHA-256 of the leaf certificate (DER), as `sha256:AB:CD:…`.
    pub fingerprint: String,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// `sha256:` and the colon-separated hex of the SHA-256 of `der`.
pub fn fingerprint(der: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, der);
    let hex: Vec<String> = d.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    format!("sha256:{}", hex.join(":"))
}

/// Parses a fingerprint as [`fingerprint`] prints it (the `sha256:` prefix, colons and case
/// optional).
pub fn parse_fingerprint(s: &str) -> Result<[u8; 32], String> {
    let t = s.trim();
    let hex: String = t
        .strip_prefix("sha256:")
        .or_else(|| t.strip_prefix("SHA256:"))
        .unwrap_or(t)
        .chars()
        .filter(|c| *c != ':')
        .collect();
    let bad =
        || format!("fingerprint '{s}': expected the 64 hex digits of a SHA-256 (sha256:AB:CD:…)");
    if hex.len() != 64 {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    Ok(out)
}

fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Identity, String> {
    let leaf = chain
        .first()
        .ok_or("--tls-cert: no certificate in the file")?;
    let fingerprint = fingerprint(leaf.as_ref());
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(rustls::DEFAULT_VERSIONS)
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Identity {
        config: Arc::new(config),
        fingerprint,
    })
}

/// A self-signed certificate made at start for `names` (host names and IP addresses), with
/// a fresh key: nothing to keep on disk; the controller pins the printed fingerprint.
pub fn self_signed(names: &[String]) -> Result<Identity, String> {
    let err = |e: rcgen::Error| format!("cannot make a certificate: {e}");
    let key = rcgen::KeyPair::generate().map_err(err)?;
    let mut params = rcgen::CertificateParams::new(names.to_vec()).map_err(err)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "overload generator agent");
    let cert = params.self_signed(&key).map_err(err)?;
    let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())
        .map_err(|e| format!("cannot read the key made: {e}"))?;
    server_config(vec![cert.der().clone()], key)
}

/// The owner's certificate chain and key (PEM files).
pub fn from_files(cert: &std::path::Path, key: &std::path::Path) -> Result<Identity, String> {
    let c = crate::fsutil::read_capped(cert, MAX_PEM, "--tls-cert")?;
    let k = crate::fsutil::read_capped(key, MAX_PEM, "--tls-key")?;
    let chain = CertificateDer::pem_slice_iter(&c)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("--tls-cert: not a PEM certificate file ({e})"))?;
    let key = PrivateKeyDer::from_pem_slice(&k)
        .map_err(|e| format!("--tls-key: no usable private key ({e})"))?;
    server_config(chain, key)
}

/// How the controller trusts an agent's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The leaf certificate's SHA-256 must be this (what the agent printed at start).
    Pinned([u8; 32]),
    /// The chain must verify against these PEM CA certificates, for the URL's host name.
    Ca(Vec<u8>),
}

/// The controller's TLS client for one agent.
pub fn client(trust: &Trust) -> Result<Arc<rustls::ClientConfig>, String> {
    let p = provider();
    let b = rustls::ClientConfig::builder_with_provider(Arc::clone(&p))
        .with_protocol_versions(rustls::DEFAULT_VERSIONS)
        .map_err(|e| e.to_string())?;
    let mut cfg = match trust {
        Trust::Pinned(fp) => b
            .dangerous()
            .with_custom_certificate_verifier(Verifier::new(Pinned(*fp), p))
            .with_no_client_auth(),
        Trust::Ca(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(pem) {
                let c = c.map_err(|e| format!("cacert: not a PEM certificate file ({e})"))?;
                roots
                    .add(c)
                    .map_err(|e| format!("cacert: unusable certificate ({e})"))?;
            }
            if roots.is_empty() {
                return Err("cacert: no certificate in the file".into());
            }
            b.with_root_certificates(roots).with_no_client_auth()
        }
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Accepts exactly the certificate whose SHA-256 is the pin (names and dates are the pin's
/// business: the owner printed it); the handshake's signatures are still verified (the shared
/// [`Verifier`]), so only the holder of that certificate's key gets through.
#[derive(Debug)]
struct Pinned([u8; 32]);

impl CertPolicy for Pinned {
    fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let d = ring::digest::digest(&ring::digest::SHA256, end_entity.as_ref());
        if crate::observe::agent::constant_time_eq(d.as_ref(), &self.0) {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the agent's certificate is {}, not the pinned fingerprint",
                fingerprint(end_entity.as_ref())
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_print_and_parse_back() {
        let id = self_signed(&["localhost".into(), "127.0.0.1".into()]).unwrap();
        assert!(id.fingerprint.starts_with("sha256:"), "{}", id.fingerprint);
        assert_eq!(id.fingerprint.len(), 7 + 32 * 3 - 1);
        let fp = parse_fingerprint(&id.fingerprint).unwrap();
        let bare: String = id.fingerprint[7..].replace(':', "").to_lowercase();
        assert_eq!(parse_fingerprint(&bare).unwrap(), fp);
        for bad in ["", "sha256:AB", &"Z".repeat(64)] {
            assert!(parse_fingerprint(bad).is_err(), "{bad}");
        }
        client(&Trust::Pinned(fp)).unwrap();
        assert!(client(&Trust::Ca(b"not pem".to_vec())).is_err());
    }

    /// The pin through the shared verifier: the pinned certificate passes whatever its name,
    /// another one is refused and named; the signatures are the provider's to check.
    #[test]
    fn the_pin_accepts_its_certificate_only() {
        let make = || {
            let key = rcgen::KeyPair::generate().unwrap();
            let params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
            params.self_signed(&key).unwrap().der().clone()
        };
        let (mine, other) = (make(), make());
        let pin = parse_fingerprint(&fingerprint(mine.as_ref())).unwrap();
        let v = Verifier::new(Pinned(pin), provider());
        let name = ServerName::try_from("elsewhere.example").unwrap();
        let now = UnixTime::now();
        use rustls::client::danger::ServerCertVerifier;
        assert!(v.verify_server_cert(&mine, &[], &name, &[], now).is_ok());
        let e = v
            .verify_server_cert(&other, &[], &name, &[], now)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not the pinned fingerprint"), "{e}");
        assert!(!v.supported_verify_schemes().is_empty());
    }
}
