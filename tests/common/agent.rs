//! A real generator agent (`overload agent --generate`) for the tests that drive the
//! controller against it (tests/suite/generate.rs, tests/hostile/scale.rs), and its token file.
use super::{bin, scratch};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Stdio};

/// The token every test agent is started with.
pub const TOKEN: &str = "generate-test-token-0123456789";

/// An `overload agent --generate` on a free loopback port; killed on drop.
pub struct Agent {
    pub child: Child,
    pub addr: SocketAddr,
    /// The certificate fingerprint it printed (with --tls-self-signed).
    pub fingerprint: Option<String>,
    _dir: tempfile::TempDir,
}

impl Agent {
    /// `overload agent --listen 127.0.0.1:0 --generate --token-file … ARGS`.
    pub fn start(args: &[&str]) -> Agent {
        let dir = scratch();
        let tok = dir.path().join("token");
        write_token(&tok);
        let mut child = bin()
            .args(["agent", "--listen", "127.0.0.1:0", "--generate"])
            .arg("--token-file")
            .arg(&tok)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn agent");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).expect("agent banner");
        let addr = line
            .split("://")
            .nth(1)
            .and_then(|a| a.trim().parse().ok())
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        let mut fingerprint = None;
        if line.starts_with("agent listening on https") {
            let mut l = String::new();
            out.read_line(&mut l).unwrap();
            fingerprint = l.strip_prefix("certificate ").map(|f| f.trim().to_string());
        }
        // Keep draining its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        Agent {
            child,
            addr,
            fingerprint,
            _dir: dir,
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The token file, readable by its owner only (else the agent warns on stderr).
pub fn write_token(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}
