//! The live report page, served by the server core (`listen`: a thread per connection, a
//! head deadline, bounded slots, a shutdown that never waits on a client), rendering the
//! report from the results folder at each request, with the per-second series of the step in
//! progress that the runner shows it (a single run stores its only step at the end: without
//! them its page would stay empty until then).
use crate::listen::{Head, Limits, Reply, Service};
use crate::report::RunReport;
use crate::store::{ControlEvent, SeriesPoint};
use crate::Error;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a peer may make the page spend: a browser sends its head at once (2 s is generous);
/// a render reads the folder, so 4 at once; 128 connections may be sending their heads.
pub const LIMITS: Limits = Limits {
    pending_per_peer: 16,
    serving: 4,
    body_deadline: Duration::from_secs(2),
    ..Limits::BASE
};

pub struct LivePage {
    url: String,
    /// Stops when dropped: a bounded stop, whatever the clients do.
    _server: crate::listen::Server,
    /// The seconds of the step in progress, not yet in the folder.
    running: Arc<Running>,
}

impl LivePage {
    /// Serves `dir`'s report on `addr` until dropped; `flag` names the option in errors.
    pub fn start(addr: SocketAddr, flag: &str, dir: &Path) -> crate::Result<LivePage> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::usage(format!("{flag}: cannot listen on {addr}: {e}")))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::runtime(format!("{flag}: {e}")))?;
        if let Some(w) = plain_remote_warning(bound) {
            crate::eoutln!("overload: warning: {flag}: {w}");
        }
        let path = format!("/{}/", token()?);
        let url = format!("http://{bound}{path}");
        let running = Arc::new(Mutex::new((Vec::new(), Vec::new())));
        let page = Page {
            path,
            dir: dir.to_path_buf(),
            running: Arc::clone(&running),
        };
        let server = crate::listen::serve(listener, "live-page", LIMITS, Arc::new(page), None)
            .map_err(|e| Error::runtime(format!("{flag}: {e}")))?;
        Ok(LivePage {
            url,
            _server: server,
            running,
        })
    }

    /// The per-second series of the step in progress so far (replacing the last ones
    /// shown), with live control's changes to it; the page shows them beside the folder's
    /// until that step is stored.
    pub fn show_series(&self, points: Vec<SeriesPoint>, events: Vec<ControlEvent>) {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = (points, events);
    }

    /// The page's address, token included.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Beyond loopback, the page (plain HTTP) shows its secret path and the report to whoever
/// watches the network between the browser and this host.
pub(super) fn plain_remote_warning(bound: SocketAddr) -> Option<&'static str> {
    (!bound.ip().is_loopback()).then_some(
        "served beyond loopback over plain HTTP: the secret path and the report travel in \
         clear text (an SSH tunnel to a loopback --live-port keeps them private)",
    )
}

/// 128 random bits from the kernel, in hex: the page's secret path.
pub(super) fn token() -> crate::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::runtime(format!("live report: no random token (/dev/urandom: {e})")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

type Running = Mutex<(Vec<SeriesPoint>, Vec<ControlEvent>)>;

/// The page as the server core sees it.
struct Page {
    /// The secret path, `/TOKEN/`.
    path: String,
    dir: PathBuf,
    running: Arc<Running>,
}

impl Service for Page {
    /// The secret path first (404 without it, before any rendering), then the method.
    fn admit(&self, head: &Head) -> Result<usize, Reply> {
        let target = head.target.as_str();
        if target != self.path && target != self.path.trim_end_matches('/') {
            Err(html(404, "not found\n".into()))
        } else if head.method != "GET" {
            Err(html(405, "only GET\n".into()).with_header("Allow", "GET"))
        } else {
            Ok(0)
        }
    }
    fn answer(&self, _: &Head, _: &[u8]) -> Reply {
        html(200, page(&self.dir, &self.running))
    }
}

fn html(status: u16, body: String) -> Reply {
    Reply {
        status,
        content_type: "text/html; charset=utf-8",
        body: body.into_bytes(),
        headers: Vec::new(),
    }
}

/// The answer to a request arriving whole in `buf` for a page at `secret` (`/TOKEN/`) over
/// `dir`, or None while it is incomplete: the listener's judgement without I/O (unit tests,
/// the `listeners` fuzz target).
pub fn respond(buf: &[u8], secret: &str, dir: &Path) -> Option<Reply> {
    let page = Page {
        path: secret.to_string(),
        dir: dir.to_path_buf(),
        running: Arc::new(Mutex::new((Vec::new(), Vec::new()))),
    };
    crate::listen::respond(&page, buf, LIMITS.max_head)
}

/// The report of what is stored so far, with the seconds of the step in progress, reloaded
/// by the browser every second.
fn page(dir: &Path, running: &Running) -> String {
    const REFRESH: &str = "<meta http-equiv=\"refresh\" content=\"1\"/>";
    match RunReport::load(dir) {
        Ok(mut r) => {
            let (shown, events) = running.lock().unwrap_or_else(|e| e.into_inner()).clone();
            // Once its step is stored, the folder has these seconds (and the server's side)
            // and these changes.
            let stored = |step: usize| r.steps.iter().any(|s| s.step == step);
            r.data
                .series
                .extend(shown.into_iter().filter(|p| !stored(p.step)));
            r.data
                .events
                .extend(events.into_iter().filter(|e| !stored(e.step)));
            crate::report::html_page::render(&r).replacen("<head>", &format!("<head>{REFRESH}"), 1)
        }
        Err(e) => format!(
            "<!DOCTYPE html><html><head>{REFRESH}<title>overload: waiting</title></head>\
             <body><p>waiting for the run's first figures ({})</p></body></html>",
            crate::report::svg::esc(&e.to_string())
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_get_of_the_secret_path_is_the_page() {
        let p = "/abc123/";
        let dir = Path::new("/nonexistent/overload-live");
        let status = |raw: &str| respond(raw.as_bytes(), p, dir).map(|r| r.status);
        assert_eq!(status("GET /abc123/ HTTP/1.1\r\n\r\n"), Some(200));
        assert_eq!(status("GET /abc123 HTTP/1.1\r\n\r\n"), Some(200));
        assert_eq!(status("POST /abc123/ HTTP/1.1\r\n\r\n"), Some(405));
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), Some(404));
        assert_eq!(status("GET /abc12/ HTTP/1.1\r\n\r\n"), Some(404));
        assert_eq!(status("GET /abc123/../x HTTP/1.1\r\n\r\n"), Some(404));
        assert_eq!(status("GET /abc123/ HTTP/1.1\r\n"), None, "incomplete");
        assert_eq!(status("\x01\x02 / HTTP/1.1\r\n\r\n"), Some(400));
        assert_eq!(
            status("GET /abc123/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"),
            Some(413),
            "a GET carries no body"
        );
    }

    #[test]
    fn plain_http_beyond_loopback_is_warned_about() {
        assert!(plain_remote_warning("0.0.0.0:8089".parse().unwrap()).is_some());
        assert!(plain_remote_warning("127.0.0.1:8089".parse().unwrap()).is_none());
        assert!(plain_remote_warning("[::1]:8089".parse().unwrap()).is_none());
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (token().unwrap(), token().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
