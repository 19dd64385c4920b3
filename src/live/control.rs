//! `--control-port`: live control as authenticated requests, beside the terminal view's keys
//! (both steer the engine through the run's one `engine::steer::Steer`). A small HTTP API on
//! the server core (`listen`: a head deadline, bounded slots, a bounded stop), behind a random
//! secret path printed on the terminal, on loopback unless an address is given:
//!
//! `POST /TOKEN/rate?to=N`, `/TOKEN/rate?by=+N` (or `-N`), `/TOKEN/users?to=N|by=±N`,
//! `/TOKEN/pause`, `/TOKEN/resume`; `GET /TOKEN/state` (JSON). Everything is judged on the
//! head alone: a wrong path is 404 before anything else, no request may carry a body, and a
//! level above the cap (`--control-max`, else 10× the planned level) is refused with the
//! reason: the port cannot turn the generator into a flood against a third party.
use crate::engine::steer::{By, Change, Steer, Unit};
use crate::listen::{Head, Limits, Reply, Service};
use crate::Error;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

/// What a peer may make the port spend: a head of 1 KiB sent within 2 s (a slow client is
/// cut there), no body, 2 answers at once, 4 connections per peer still sending.
pub const CONTROL_LIMITS: Limits = Limits {
    pending: 32,
    pending_per_peer: 4,
    serving: 2,
    head_deadline: Duration::from_secs(2),
    max_head: 1024,
    body_deadline: Duration::from_secs(1),
    write_deadline: Duration::from_secs(2),
};

pub struct ControlPort {
    url: String,
    /// Stops when dropped: a bounded stop, whatever the clients do.
    _server: crate::listen::Server,
}

impl ControlPort {
    /// Serves live control of `steer` on `addr` until dropped.
    pub fn start(addr: SocketAddr, steer: Arc<Steer>) -> crate::Result<ControlPort> {
        let flag = format!("--control-port {addr}");
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::usage(format!("{flag}: cannot listen on {addr}: {e}")))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::runtime(format!("{flag}: {e}")))?;
        if let Some(w) = super::page::plain_remote_warning(bound) {
            crate::eoutln!("overload: warning: {flag}: {w}");
        }
        let secret = super::page::token()?;
        let url = format!("http://{bound}/{secret}/");
        let port = Port {
            prefix: format!("/{secret}/"),
            steer,
        };
        let server = crate::listen::serve(
            listener,
            "control-port",
            CONTROL_LIMITS,
            Arc::new(port),
            None,
        )
        .map_err(|e| Error::runtime(format!("{flag}: {e}")))?;
        Ok(ControlPort {
            url,
            _server: server,
        })
    }

    /// The port's base address, secret path included (`…/TOKEN/`).
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The port as the server core sees it.
struct Port {
    /// `/TOKEN/`.
    prefix: String,
    steer: Arc<Steer>,
}

/// What a request asks, read from its target.
#[derive(Debug, PartialEq)]
enum Ask {
    State,
    Change(Option<Unit>, Change),
}

impl Port {
    /// The request's ask, or the answer that refuses it (404 for any path outside the
    /// secret one, so a wrong token learns nothing).
    fn ask(&self, head: &Head) -> Result<Ask, Reply> {
        let Some(rest) = head.target.strip_prefix(&self.prefix) else {
            return Err(Reply::text(404, "not found"));
        };
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (want, ask) = match path {
            "state" => ("GET", Ok(Ask::State)),
            "pause" => ("POST", Ok(Ask::Change(None, Change::Pause))),
            "resume" => ("POST", Ok(Ask::Change(None, Change::Resume))),
            "rate" => (
                "POST",
                level(query).map(|c| Ask::Change(Some(Unit::Rate), c)),
            ),
            "users" => (
                "POST",
                level(query).map(|c| Ask::Change(Some(Unit::Users), c)),
            ),
            _ => return Err(Reply::text(404, "not found")),
        };
        if head.method != want {
            return Err(Reply::text(405, &format!("only {want} here"))
                .with_header("Allow", if want == "GET" { "GET" } else { "POST" }));
        }
        ask.map_err(|e| Reply::text(400, &e))
    }
}

/// `to=N` or `by=±N`, nothing else.
fn level(query: &str) -> Result<Change, String> {
    let usage = "give to=N or by=+N / by=-N";
    let (k, v) = query.split_once('=').ok_or(usage)?;
    let n: f64 = v
        .trim_start_matches('+')
        .parse()
        .map_err(|_| format!("'{v}' is not a number: {usage}"))?;
    if !n.is_finite() {
        return Err(format!("'{v}' is not a number: {usage}"));
    }
    match k {
        "to" => Ok(Change::To(n)),
        "by" => Ok(Change::By(n)),
        _ => Err(usage.to_string()),
    }
}

fn json(status: u16, v: serde_json::Value) -> Reply {
    let mut body = serde_json::to_vec(&v).unwrap_or_default();
    body.push(b'\n');
    Reply {
        status,
        ..Reply::json(body)
    }
}

impl Service for Port {
    fn admit(&self, head: &Head) -> Result<usize, Reply> {
        self.ask(head).map(|_| 0)
    }

    fn answer(&self, head: &Head, _: &[u8]) -> Reply {
        let ask = match self.ask(head) {
            Ok(a) => a,
            Err(r) => return r,
        };
        match ask {
            Ask::State => match self.steer.state() {
                Some(s) => json(
                    200,
                    serde_json::json!({
                        "step": s.step,
                        "what": s.unit.what(),
                        "level": s.level,
                        "paused": s.paused,
                        "ramp": s.ramp,
                        "held": s.held,
                        "max": s.max,
                        "step_size": s.step_size,
                        "changes": s.changes,
                    }),
                ),
                None => json(
                    409,
                    serde_json::json!({"error": "no step in progress (between steps, or the run ended)"}),
                ),
            },
            Ask::Change(unit, change) => {
                let runs = self.steer.state().map(|s| s.unit);
                if let (Some(want), Some(is)) = (unit, runs) {
                    if want != is {
                        return json(
                            409,
                            serde_json::json!({"error": format!(
                                "this run's load is {} ({} loop): use /{}",
                                is.what(),
                                if is == Unit::Rate { "open" } else { "closed" },
                                is.what()
                            )}),
                        );
                    }
                }
                match self.steer.apply(change, By::Port) {
                    Ok(a) => json(
                        200,
                        serde_json::json!({
                            "what": a.what, "from": a.from, "to": a.to,
                            "step": a.step, "in_effect_after_s": crate::engine::steer::LEAD.as_secs_f64(),
                        }),
                    ),
                    Err(why) => json(409, serde_json::json!({ "error": why })),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::steer::Settings;

    fn port() -> Port {
        Port {
            prefix: "/abc123/".into(),
            steer: Steer::new(Settings::default()),
        }
    }

    fn answer(p: &Port, raw: &str) -> Reply {
        crate::listen::respond(p, raw.as_bytes(), CONTROL_LIMITS.max_head).expect("whole")
    }

    /// Only the secret path, the right method and no body; a wrong token is 404 and changes
    /// nothing; a malformed level is 400 with what to give.
    #[test]
    fn the_token_the_method_and_the_query_are_judged_first() {
        let p = port();
        let status = |raw: &str| answer(&p, raw).status;
        assert_eq!(status("POST /abc12/rate?to=5 HTTP/1.1\r\n\r\n"), 404);
        assert_eq!(status("POST /rate?to=5 HTTP/1.1\r\n\r\n"), 404);
        assert_eq!(status("POST /abc123/../rate?to=5 HTTP/1.1\r\n\r\n"), 404);
        assert_eq!(status("GET /abc123/rate?to=5 HTTP/1.1\r\n\r\n"), 405);
        assert_eq!(status("POST /abc123/state HTTP/1.1\r\n\r\n"), 405);
        assert_eq!(status("POST /abc123/rate?to=lots HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("POST /abc123/rate?x=5 HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("POST /abc123/rate?to=NaN HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(
            status("POST /abc123/rate?to=5 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"),
            413,
            "no body"
        );
        // Valid, but no step runs yet: refused with the reason.
        assert_eq!(status("POST /abc123/rate?to=5 HTTP/1.1\r\n\r\n"), 409);
        assert!(p.steer.log().is_empty());
    }

    #[test]
    fn a_change_the_cap_and_the_state() {
        let p = port();
        p.steer.bind(
            std::time::Instant::now(),
            Unit::Rate,
            50.0,
            None,
            Some(60.0),
        );
        let ok = answer(&p, "POST /abc123/rate?by=+25 HTTP/1.1\r\n\r\n");
        assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
        let v: serde_json::Value = serde_json::from_slice(&ok.body).unwrap();
        assert_eq!(
            (v["from"].as_f64(), v["to"].as_f64()),
            (Some(50.0), Some(75.0))
        );
        let cap = answer(&p, "POST /abc123/rate?to=501 HTTP/1.1\r\n\r\n");
        assert_eq!(cap.status, 409);
        assert!(String::from_utf8_lossy(&cap.body).contains("above the cap of 500"));
        let users = answer(&p, "POST /abc123/users?to=5 HTTP/1.1\r\n\r\n");
        assert_eq!(users.status, 409);
        assert!(String::from_utf8_lossy(&users.body).contains("use /rate"));
        assert_eq!(
            answer(&p, "POST /abc123/pause HTTP/1.1\r\n\r\n").status,
            200
        );
        let st = answer(&p, "GET /abc123/state HTTP/1.1\r\n\r\n");
        let v: serde_json::Value = serde_json::from_slice(&st.body).unwrap();
        assert_eq!(v["paused"], true);
        assert_eq!(v["what"], "rate");
        assert_eq!(v["changes"], 2);
    }
}
