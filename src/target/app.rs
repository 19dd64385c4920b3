//! `/app/*`: a small application that requires a login, for scenarios to be tested against
//! (tests/suite/scenario.rs, docs/scenarios.md). A form POST to `/app/login` (`user`, `password`:
//! the password is `pw-` then the user) returns a session cookie; `/app/account` shows the
//! session's user and a fresh CSRF token; `/app/post` (`csrf`, `user`) must echo that token
//! and name the session's own user, else it is refused and, for a wrong user, counted as a
//! mismatch (one user's cookie seen on another's request). `/app/stats` shows the counters.
//! Off the hot path: a mutex-guarded session table is fine here.
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The pages of the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Page {
    Login,
    Account,
    Post,
    Stats,
}

impl Page {
    pub(crate) fn parse(path: &str) -> Option<Page> {
        Some(match path {
            "/app/login" => Page::Login,
            "/app/account" => Page::Account,
            "/app/post" => Page::Post,
            "/app/stats" => Page::Stats,
            _ => return None,
        })
    }
}

/// What a page needs of its request beyond the head's framing facts.
#[derive(Debug, Default)]
pub(crate) struct Request {
    pub cookie: Option<String>,
    pub body: Vec<u8>,
}

/// Largest form body read (the rest of a larger one is skipped).
pub(crate) const MAX_FORM: u64 = 16 * 1024;

impl Request {
    /// The cookies of an HTTP/2 or HTTP/3 request (which may split them over several
    /// `cookie` fields, RFC 9113 §8.2.3), joined as one header.
    pub(crate) fn cookie_of(headers: &http::HeaderMap) -> Option<String> {
        let all: Vec<&str> = headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        (!all.is_empty()).then(|| all.join("; "))
    }

    /// The `Cookie` header of a request head.
    pub(crate) fn from_head(head: &[u8]) -> Request {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        let _ = req.parse(head);
        let cookie = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("cookie"))
            .and_then(|h| std::str::from_utf8(h.value).ok())
            .map(str::to_string);
        Request {
            cookie,
            body: Vec::new(),
        }
    }

    fn session_id(&self) -> Option<&str> {
        self.cookie.as_deref()?.split(';').find_map(|c| {
            let (k, v) = c.trim().split_once('=')?;
            (k == "sid").then_some(v)
        })
    }
}

struct Session {
    user: String,
    csrf: Option<String>,
}

/// The application's state: sessions and counters.
#[derive(Default)]
pub(crate) struct App {
    sessions: Mutex<HashMap<String, Session>>,
    next: AtomicU64,
    logins: AtomicU64,
    posts: AtomicU64,
    /// Requests without a valid session (no cookie, or an unknown one).
    unauthenticated: AtomicU64,
    csrf_failures: AtomicU64,
    /// A post naming another user than the session's.
    mismatches: AtomicU64,
}

/// A page's answer: status, an optional `Set-Cookie`, the body.
pub(crate) struct Answer {
    pub status: u16,
    pub set_cookie: Option<String>,
    pub body: String,
}

fn answer(status: u16, body: impl Into<String>) -> Answer {
    Answer {
        status,
        set_cookie: None,
        body: body.into(),
    }
}

/// The value of `key` in a form body (`a=1&b=2`; `+` and `%XX` decoded).
fn form_value(body: &[u8], key: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    text.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| percent_decode(v))
    })
}

fn percent_decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
                match (hex(b[i + 1]), hex(b[i + 2])) {
                    (Some(h), Some(l)) => {
                        out.push(h * 16 + l);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl App {
    fn token(&self) -> String {
        // Unguessable enough for a test server: a counter mixed with random bits.
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{:016x}{n:x}", fastrand::u64(..))
    }

    pub(crate) fn answer(&self, page: Page, req: &Request) -> Answer {
        match page {
            Page::Stats => answer(
                200,
                format!(
                    "{{\"logins\":{},\"posts\":{},\"unauthenticated\":{},\"csrf_failures\":{},\
                     \"mismatches\":{}}}\n",
                    self.logins.load(Ordering::Relaxed),
                    self.posts.load(Ordering::Relaxed),
                    self.unauthenticated.load(Ordering::Relaxed),
                    self.csrf_failures.load(Ordering::Relaxed),
                    self.mismatches.load(Ordering::Relaxed),
                ),
            ),
            Page::Login => {
                let (Some(user), Some(pw)) = (
                    form_value(&req.body, "user"),
                    form_value(&req.body, "password"),
                ) else {
                    return answer(400, "user and password, please\n");
                };
                if user.is_empty() || pw != format!("pw-{user}") {
                    return answer(403, "wrong password\n");
                }
                let sid = self.token();
                let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
                sessions.insert(
                    sid.clone(),
                    Session {
                        user: user.clone(),
                        csrf: None,
                    },
                );
                self.logins.fetch_add(1, Ordering::Relaxed);
                Answer {
                    status: 200,
                    set_cookie: Some(format!("sid={sid}; Path=/app; HttpOnly")),
                    body: format!("welcome {user}\n"),
                }
            }
            Page::Account => {
                let token = self.token();
                let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
                let Some(s) = req.session_id().and_then(|id| sessions.get_mut(id)) else {
                    self.unauthenticated.fetch_add(1, Ordering::Relaxed);
                    return answer(401, "log in first\n");
                };
                s.csrf = Some(token.clone());
                answer(
                    200,
                    format!(
                        "<p>user: {}</p><form method=post action=/app/post>\
                         <input type=hidden name=\"csrf\" value=\"{token}\"></form>\n",
                        s.user
                    ),
                )
            }
            Page::Post => {
                let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
                let Some(s) = req.session_id().and_then(|id| sessions.get_mut(id)) else {
                    self.unauthenticated.fetch_add(1, Ordering::Relaxed);
                    return answer(401, "log in first\n");
                };
                let csrf = form_value(&req.body, "csrf");
                if csrf.is_none() || csrf != s.csrf {
                    self.csrf_failures.fetch_add(1, Ordering::Relaxed);
                    return answer(403, "bad csrf token\n");
                }
                // A token serves once.
                s.csrf = None;
                if form_value(&req.body, "user").as_deref() != Some(s.user.as_str()) {
                    self.mismatches.fetch_add(1, Ordering::Relaxed);
                    return answer(409, "not your session\n");
                }
                self.posts.fetch_add(1, Ordering::Relaxed);
                answer(200, format!("posted by {}\n", s.user))
            }
        }
    }
}

/// Appends a complete answer (its head with the session cookie, its body) to `out`.
pub(crate) fn write(out: &mut Vec<u8>, a: &Answer, close: bool, is_head: bool) {
    use super::routes::{push_decimal, reason};
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, u64::from(a.status));
    out.push(b' ');
    out.extend_from_slice(reason(a.status).as_bytes());
    out.extend_from_slice(b"\r\nServer: overload-target\r\nContent-Type: text/html\r\n");
    if let Some(c) = &a.set_cookie {
        out.extend_from_slice(b"Set-Cookie: ");
        out.extend_from_slice(c.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Content-Length: ");
    push_decimal(out, a.body.len() as u64);
    out.extend_from_slice(b"\r\n");
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !is_head {
        out.extend_from_slice(a.body.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(cookie: Option<&str>, body: &str) -> Request {
        Request {
            cookie: cookie.map(str::to_string),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn login_account_post() {
        let app = App::default();
        assert_eq!(
            app.answer(Page::Login, &req(None, "user=ann&password=x"))
                .status,
            403
        );
        let a = app.answer(Page::Login, &req(None, "user=ann&password=pw-ann"));
        assert_eq!(a.status, 200);
        let cookie = a.set_cookie.unwrap();
        let sid = cookie.split(';').next().unwrap().to_string();
        assert_eq!(app.answer(Page::Account, &req(None, "")).status, 401);
        let page = app
            .answer(Page::Account, &req(Some(&format!("x=1; {sid}")), ""))
            .body;
        assert!(page.contains("user: ann"));
        let token = page
            .split("value=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let post = |body: String| app.answer(Page::Post, &req(Some(&sid), &body)).status;
        assert_eq!(post("csrf=wrong&user=ann".into()), 403);
        assert_eq!(post(format!("csrf={token}&user=ann")), 200);
        // The token served once.
        assert_eq!(post(format!("csrf={token}&user=ann")), 403);
        let page = app.answer(Page::Account, &req(Some(&sid), "")).body;
        let token = page
            .split("value=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert_eq!(post(format!("csrf={token}&user=bob")), 409);
        let stats = app.answer(Page::Stats, &req(None, "")).body;
        assert!(
            stats.contains("\"logins\":1") && stats.contains("\"mismatches\":1"),
            "{stats}"
        );
        assert_eq!(percent_decode("a+b%20c%zz"), "a b c%zz");
    }
}
