//! The engine configuration of a run, built from its use case's configuration: the request
//! mix rendered in the forms the run sends, TLS and the protocol, connections, timing.
use super::config::{check_load, ConnConfig, HttpVersion, OpenLoopConfig, RequestConfig};
use super::mix::Mix;
use super::probe::tls_and_protocol;
use crate::engine::{EngineConfig, Load, Reuse};
use crate::metrics::ProtocolChoice;
use crate::plan::Segment;
use crate::Error;
use std::time::Duration;

/// The engine configuration shared by run, sweep and capacity (the load itself aside).
pub fn base_config(
    request: &RequestConfig,
    conn: &ConnConfig,
    load: Load,
    duration: Option<Duration>,
    max_requests: Option<u64>,
    warmup: Duration,
) -> crate::Result<(EngineConfig, Vec<String>)> {
    conn.validate()?;
    let mut mix = request.mix()?;
    mix.ok_status = request.ok_status;
    base_config_of(mix, conn, load, duration, max_requests, warmup)
}

/// As [`base_config`], for a mix already resolved (a generator agent's step).
pub fn base_config_of(
    mut mix: Mix,
    conn: &ConnConfig,
    load: Load,
    duration: Option<Duration>,
    max_requests: Option<u64>,
    warmup: Duration,
) -> crate::Result<(EngineConfig, Vec<String>)> {
    conn.validate()?;
    check_load(&load)?;
    let (tls, protocol, choice) = if mix.tls_servers.is_empty() {
        if conn.tls.any_set() {
            return Err(Error::usage(
                "TLS options (--cacert, --insecure, --client-cert, --tls-*) need https:// URLs",
            ));
        }
        if conn.alt_svc {
            return Err(Error::usage(
                "--alt-svc needs https:// URLs (HTTP/3 runs over QUIC, which carries TLS)",
            ));
        }
        let choice = match conn.http {
            HttpVersion::V3 => {
                return Err(Error::usage(
                    "--http 3 needs https:// URLs (QUIC always carries TLS); use --http 2 or \
                     1.1 for http://",
                ))
            }
            HttpVersion::V2 => ProtocolChoice::new("2", "http-flag"),
            HttpVersion::V1 => ProtocolChoice::new("1.1", "http-flag"),
            HttpVersion::Auto => ProtocolChoice::new("1.1", "cleartext"),
        };
        (None, conn.protocol_of(&choice), choice)
    } else {
        let p = tls_and_protocol(conn, &mix.tls_servers)?;
        if let Some((from, to)) = p.moved {
            // Alt-Svc moves the connections, not the origin: Host and :authority stay.
            for a in mix.addrs.iter_mut().filter(|a| **a == from) {
                *a = to;
            }
        }
        (Some(p.tls), p.protocol, p.choice)
    };
    let reuse = Reuse {
        keep_alive: conn.keep_alive && conn.calls_per_connection != Some(1),
        calls_per_connection: conn.calls_per_connection,
    };
    let requests = Mix::render(mix.requests, protocol, reuse);
    let cfg = EngineConfig {
        addrs: mix.addrs,
        requests: std::sync::Arc::new(requests),
        pick: mix.pick,
        load,
        duration,
        max_requests,
        warmup,
        threads: conn.threads(),
        keep_alive: reuse.keep_alive,
        calls_per_connection: reuse.calls_per_connection,
        timeout: conn.timeout,
        connect_timeout: conn.connect_timeout,
        seed: conn.seed,
        pacing_slack: conn.pacing_slack,
        segment: Segment::WHOLE,
        tls,
        protocol,
        scenario: mix.scenario,
        names: mix.names,
        weights: std::sync::Arc::new(mix.weights),
        replay: mix.replay,
        ramp: None,
        max_sessions: OpenLoopConfig::default().max_sessions,
        ok_status: mix.ok_status,
        protocol_choice: choice,
        io: conn.io,
        source: conn.source.clone(),
        steer: None,
    };
    if let Some(s) = &cfg.source {
        // Once per run, before any connection: a wrong --source is one line, not an error
        // per connect.
        s.check_families(&cfg.addrs).map_err(Error::usage)?;
        s.probe().map_err(Error::usage)?;
    }
    // An `--io uring` the kernel (or HTTP/3) refuses is a usage error before anything runs.
    cfg.backend()?;
    Ok((cfg, mix.urls))
}
