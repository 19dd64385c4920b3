//! The live report page: a small blocking server on one thread (one browser tab is its
//! audience), rendering the report from the results folder at each request, with the
//! per-second series of the step in progress that the runner shows it (a single run stores
//! its only step at the end: without them its page would stay empty until then).
use crate::report::RunReport;
use crate::store::SeriesPoint;
use crate::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Largest request head read; anything longer is not a browser's GET.
const MAX_HEAD: usize = 8192;

pub struct LivePage {
    url: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The seconds of the step in progress, not yet in the folder.
    running: Arc<Mutex<Vec<SeriesPoint>>>,
}

impl LivePage {
    /// Serves `dir`'s report on `addr` until dropped; `flag` names the option in errors.
    pub fn start(addr: SocketAddr, flag: &str, dir: &Path) -> crate::Result<LivePage> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::usage(format!("{flag}: cannot listen on {addr}: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::runtime(format!("{flag}: {e}")))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::runtime(format!("{flag}: {e}")))?;
        let token = token()?;
        let path = format!("/{token}/");
        let url = format!("http://{bound}{path}");
        let stop = Arc::new(AtomicBool::new(false));
        let running = Arc::new(Mutex::new(Vec::new()));
        let (stop2, dir) = (Arc::clone(&stop), dir.to_path_buf());
        let running2 = Arc::clone(&running);
        let thread = std::thread::Builder::new()
            .name("live-page".into())
            .spawn(move || serve(listener, &path, &dir, &running2, &stop2))
            .map_err(|e| Error::runtime(format!("{flag}: {e}")))?;
        Ok(LivePage {
            url,
            stop,
            thread: Some(thread),
            running,
        })
    }

    /// The per-second series of the step in progress so far (replacing the last ones
    /// shown); the page shows them beside the folder's until that step is stored.
    pub fn show_series(&self, points: Vec<SeriesPoint>) {
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = points;
    }

    /// The page's address, token included.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for LivePage {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// 128 random bits from the kernel, in hex: the page's secret path.
fn token() -> crate::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::runtime(format!("live report: no random token (/dev/urandom: {e})")))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

type Running = Mutex<Vec<SeriesPoint>>;

fn serve(listener: TcpListener, path: &str, dir: &Path, running: &Running, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, _)) => answer(conn, path, dir, running),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// What a request gets: the page for `GET <path>`, 405 for another method there, 404 else.
fn route(head: &str, path: &str) -> Route {
    let mut words = head.lines().next().unwrap_or("").split(' ');
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if target != path && target != path.trim_end_matches('/') {
        Route::NotFound
    } else if method != "GET" {
        Route::NotAllowed
    } else {
        Route::Page
    }
}

#[derive(Debug, PartialEq)]
enum Route {
    Page,
    NotAllowed,
    NotFound,
}

fn answer(mut conn: TcpStream, path: &str, dir: &Path, running: &Running) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let (status, body) = match route(&String::from_utf8_lossy(&head), path) {
        Route::Page => ("200 OK", page(dir, running)),
        Route::NotAllowed => ("405 Method Not Allowed", "only GET\n".to_string()),
        Route::NotFound => ("404 Not Found", "not found\n".to_string()),
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The report of what is stored so far, with the seconds of the step in progress, reloaded
/// by the browser every second.
fn page(dir: &Path, running: &Running) -> String {
    const REFRESH: &str = "<meta http-equiv=\"refresh\" content=\"1\"/>";
    match RunReport::load(dir) {
        Ok(mut r) => {
            let shown = running.lock().unwrap_or_else(|e| e.into_inner()).clone();
            // Once its step is stored, the folder has these seconds (and the server's side).
            r.data.series.extend(
                shown
                    .into_iter()
                    .filter(|p| !r.steps.iter().any(|s| s.step == p.step)),
            );
            crate::report::html::render(&r).replacen("<head>", &format!("<head>{REFRESH}"), 1)
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
        assert_eq!(route("GET /abc123/ HTTP/1.1\r\n", p), Route::Page);
        assert_eq!(route("GET /abc123 HTTP/1.1\r\n", p), Route::Page);
        assert_eq!(route("POST /abc123/ HTTP/1.1\r\n", p), Route::NotAllowed);
        assert_eq!(route("GET / HTTP/1.1\r\n", p), Route::NotFound);
        assert_eq!(route("GET /abc12/ HTTP/1.1\r\n", p), Route::NotFound);
        assert_eq!(route("GET /abc123/../x HTTP/1.1\r\n", p), Route::NotFound);
        assert_eq!(route("", p), Route::NotFound);
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (token().unwrap(), token().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
