//! `--source`: connections made from a list of local addresses, round-robin per thread, so a
//! run holds more connections to one server than one address has local ports; and the
//! errors of a wrong list, at start, in one line.
use crate::common::{bin, output_within, run_json, scratch, Target, QUICK};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener};
use std::sync::{Arc, Mutex};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        connections_go_round_the_source_addresses,
        every_transport_and_protocol_connects_from_the_source_addresses,
        a_wrong_source_list_is_one_line_and_exit_2
    ]
}

/// A bare HTTP/1.1 server on 127.0.0.1 that answers every request with a 2-byte body and
/// counts the connections per peer address.
fn peer_counting_server() -> (String, Arc<Mutex<HashMap<IpAddr, u32>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let peers = Arc::new(Mutex::new(HashMap::new()));
    let seen = Arc::clone(&peers);
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let peer = s.peer_addr().unwrap().ip();
            *seen.lock().unwrap().entry(peer).or_insert(0) += 1;
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    head.extend_from_slice(&buf[..n]);
                    // One answer per complete request head (GETs: no body).
                    while let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                        let close = String::from_utf8_lossy(&head[..end])
                            .to_ascii_lowercase()
                            .contains("connection: close");
                        head.drain(..end + 4);
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                        if close {
                            return;
                        }
                    }
                }
            });
        }
    });
    (url, peers)
}

/// 100 requests, each on a new connection, over two threads and four source addresses: every
/// address carries about a quarter of the connections (each thread goes round the list).
fn connections_go_round_the_source_addresses() {
    let (url, peers) = peer_counting_server();
    let (out, v) = run_json(&[
        "run",
        &url,
        "--source",
        "127.0.0.1-127.0.0.4",
        "--no-keep-alive",
        "--users",
        "4",
        "--threads",
        "2",
        "-n",
        "100",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["error_count"].as_u64(), Some(0), "{v}");
    let peers = peers.lock().unwrap().clone();
    let mut got: Vec<(String, u32)> = peers.iter().map(|(a, n)| (a.to_string(), *n)).collect();
    got.sort();
    let addrs: Vec<&str> = got.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        addrs,
        ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"],
        "{got:?}"
    );
    assert_eq!(got.iter().map(|(_, n)| n).sum::<u32>(), 100, "{got:?}");
    assert!(got.iter().all(|(_, n)| *n >= 20), "round-robin: {got:?}");
}

/// The open loop, TLS and HTTP/2 take the same source addresses: runs against the embedded
/// target (HTTPS, and h2 over it) end clean.
fn every_transport_and_protocol_connects_from_the_source_addresses() {
    let dir = scratch();
    let ca = dir.path().join("ca.pem");
    let target = Target::start(&["--tls", "--ca-out", ca.to_str().unwrap()]);
    let ca = ca.to_str().unwrap();
    for extra in [
        &["--rate", "200", "--connections", "8", "-d", "1s"][..],
        &["--http", "2", "--users", "8", "-n", "100"][..],
        &["--users", "8", "-n", "100", "--no-keep-alive"][..],
    ] {
        let mut args = vec![
            "run",
            &target.url,
            "--cacert",
            ca,
            "--source",
            "127.0.0.2-127.0.0.5",
        ];
        args.extend_from_slice(extra);
        let (out, v) = run_json(&args);
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(v["error_count"].as_u64(), Some(0), "{extra:?}: {v}");
        assert!(v["responses"].as_u64().unwrap() > 0, "{extra:?}: {v}");
    }
}

/// A wrong list is a usage error at start, in one line that names it: an address this host
/// lacks, a family the target is not, a range backwards, too many addresses.
fn a_wrong_source_list_is_one_line_and_exit_2() {
    let (url, peers) = peer_counting_server();
    for (source, says) in [
        (
            "127.0.0.1,192.0.2.7",
            "192.0.2.7: not an address of this host",
        ),
        ("::1", "no IPv4 address, but the target 127.0.0.1:"),
        ("127.0.0.9-127.0.0.1", "the range ends before it starts"),
        ("10.0.0.0/8", "more than 65536 addresses"),
        ("127.0.0.1/33", "the prefix length must be 0 to 32"),
    ] {
        let out = output_within(
            bin().args(["run", &url, "-n", "5", "--source", source]),
            QUICK,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{source}: {err}");
        assert!(err.contains(says), "{source}: {err}");
        assert!(err.contains("--source"), "{source}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{source}: {err}");
    }
    assert!(
        peers.lock().unwrap().is_empty(),
        "nothing is sent when --source is wrong"
    );
    // Sweep and capacity take it too (the same connection options).
    let out = output_within(
        bin().args([
            "sweep",
            &url,
            "--rates",
            "10",
            "--step",
            "1s",
            "--source",
            "192.0.2.7",
        ]),
        QUICK,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not an address of this host"), "{err}");
}
