//! One user of a scenario: where it is (scenario, step), its variables, its cookie jar. The
//! engine asks it for the next request's bytes and hands it each response's head and (when
//! the step reads it) body; the user answers with a [`Verdict`].
use super::cookies::{Jar, Origin};
use super::feeder::RowPer;
use super::template::Template;
use super::{Plan, Source, Step};

/// What a response meant to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// As expected; the user goes on.
    Ok,
    /// A check failed (status, body text): counted `check-failed`; the user starts over.
    CheckFailed,
    /// A value to extract was not there: counted `extract-failed`; the user starts over.
    ExtractFailed,
}

#[derive(Debug, Clone, Default)]
pub struct User {
    pub scenario: usize,
    pub step: usize,
    /// Values by variable id.
    vars: Vec<String>,
    jar: Jar,
    /// This user's number (the feeder's row when rows go per user).
    pub index: u64,
    /// Think time after the answer just judged (its step's `think`); None: the run's.
    pub think: Option<(std::time::Duration, std::time::Duration)>,
}

impl User {
    pub fn new(plan: &Plan, index: u64) -> User {
        User {
            vars: vec![String::new(); plan.var_names.len()],
            index,
            ..User::default()
        }
    }

    /// Starts an iteration: a scenario by weight (`r` uniform in [0, 1)), the first step,
    /// fresh variables and an empty jar (each iteration is a new visit, as k6's are).
    pub fn begin(&mut self, plan: &Plan, r: f64) {
        let iteration = plan.next_iteration();
        self.scenario = plan.pick(r);
        self.step = 0;
        for v in &mut self.vars {
            v.clear();
        }
        for (id, value) in &plan.constants {
            self.vars[*id].push_str(value);
        }
        if let Some((f, ids)) = &plan.feeder {
            let n = match f.per {
                RowPer::User => self.index,
                RowPer::Iteration => iteration,
            };
            let row = f.row((n % f.rows() as u64) as usize);
            for (id, value) in ids.iter().zip(row) {
                self.vars[*id].push_str(value);
            }
        }
        self.jar.clear();
    }

    pub fn current<'p>(&self, plan: &'p Plan) -> &'p Step {
        &plan.scenarios[self.scenario].steps[self.step]
    }

    /// Moves to the next step; false when the iteration is over.
    pub fn advance(&mut self, plan: &Plan) -> bool {
        self.step += 1;
        self.step < plan.scenarios[self.scenario].steps.len()
    }

    /// Writes the current step's request into `out` (cleared first). `close` asks the server
    /// to close the connection after it; `now`: Unix seconds, for cookie expiry.
    pub fn render(&self, plan: &Plan, close: bool, now: u64, out: &mut Vec<u8>) {
        self.render_step(plan, self.current(plan), close, now, out);
    }

    /// As [`User::render`], for `step`: the current step or a member of its burst.
    pub fn render_step(&self, plan: &Plan, step: &Step, close: bool, now: u64, out: &mut Vec<u8>) {
        let server = &plan.servers[step.server];
        out.clear();
        out.extend_from_slice(step.method.as_bytes());
        out.push(b' ');
        let target_at = out.len();
        render(&step.target, &self.vars, Escape::Target, out);
        let target_end = out.len();
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(server.authority.as_bytes());
        out.extend_from_slice(b"\r\n");
        let has = |n: &str| step.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
        if !has("user-agent") {
            out.extend_from_slice(b"User-Agent: ");
            out.extend_from_slice(crate::plan::request::USER_AGENT.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if !has("accept") {
            out.extend_from_slice(b"Accept: */*\r\n");
        }
        for (n, v) in &step.headers {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            render(v, &self.vars, Escape::Header, out);
            out.extend_from_slice(b"\r\n");
        }
        if plan.cookies && !self.jar.is_empty() {
            let path = request_path(&out[target_at..target_end]).to_string();
            let mark = out.len();
            out.extend_from_slice(b"Cookie: ");
            let origin = Origin {
                host: &server.host,
                path: &path,
                https: server.https,
            };
            if self.jar.header_into(origin, now, out) {
                out.extend_from_slice(b"\r\n");
            } else {
                out.truncate(mark);
            }
        }
        let body_at;
        match &step.body {
            Some(b) => {
                // The length is known once the body is rendered: render it first, at the end.
                out.extend_from_slice(b"Content-Length: ");
                let len_at = out.len();
                out.extend_from_slice(b"\r\n");
                if close {
                    out.extend_from_slice(b"Connection: close\r\n");
                }
                out.extend_from_slice(b"\r\n");
                body_at = out.len();
                render(b, &self.vars, Escape::None, out);
                let len = (out.len() - body_at).to_string();
                out.splice(len_at..len_at, len.bytes());
            }
            None => {
                if matches!(step.method.as_str(), "POST" | "PUT" | "PATCH") {
                    out.extend_from_slice(b"Content-Length: 0\r\n");
                }
                if close {
                    out.extend_from_slice(b"Connection: close\r\n");
                }
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// Judges a response to the current step: stores its cookies, checks it, extracts its
    /// values. `head`: the response head as received; `body`: the body as far as kept
    /// (decoded from chunks); `now`: Unix seconds.
    pub fn on_response(
        &mut self,
        plan: &Plan,
        status: u16,
        head: &[u8],
        body: &[u8],
        now: u64,
    ) -> Verdict {
        let step = &plan.scenarios[self.scenario].steps[self.step];
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut resp = httparse::Response::new(&mut headers);
        let parsed = resp.parse(head).is_ok();
        let headers: &[httparse::Header<'_>] = if parsed { resp.headers } else { &[] };
        self.store_cookies(plan, step, headers, now);
        if !step.status.is_empty() && !step.status.contains(&status) {
            return Verdict::CheckFailed;
        }
        if let Some(c) = &step.contains {
            let needle = c.render(&self.vars);
            if !contains(body, needle.as_bytes()) {
                return Verdict::CheckFailed;
            }
        }
        for e in &step.extract {
            let value = match &e.from {
                Source::Regex(rx, group) => rx
                    .captures(body)
                    .and_then(|c| c.get(*group))
                    .and_then(|m| std::str::from_utf8(m.as_bytes()).ok())
                    .map(str::to_string),
                Source::Json(pointer) => serde_json::from_slice::<serde_json::Value>(body)
                    .ok()
                    .and_then(|v| {
                        v.pointer(pointer).map(|x| match x {
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                    }),
                Source::Header(name) => headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .and_then(|h| std::str::from_utf8(h.value).ok())
                    .map(|v| v.trim().to_string()),
            };
            match value {
                Some(v) => self.vars[e.var] = v,
                None => return Verdict::ExtractFailed,
            }
        }
        Verdict::Ok
    }

    /// A burst member's answer: its cookies are stored (a browser keeps those of images and
    /// scripts too); it has nothing to check or extract.
    pub fn on_resource(&mut self, plan: &Plan, member: &Step, head: &[u8], now: u64) {
        if !plan.cookies {
            return;
        }
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut resp = httparse::Response::new(&mut headers);
        if resp.parse(head).is_ok() {
            self.store_cookies(plan, member, resp.headers, now);
        }
    }

    fn store_cookies(
        &mut self,
        plan: &Plan,
        step: &Step,
        headers: &[httparse::Header<'_>],
        now: u64,
    ) {
        if !plan.cookies {
            return;
        }
        let server = &plan.servers[step.server];
        let mut target = Vec::new();
        render(&step.target, &self.vars, Escape::Target, &mut target);
        let path = request_path(&target);
        let from = Origin {
            host: &server.host,
            path,
            https: server.https,
        };
        for h in headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("set-cookie"))
        {
            if let Ok(v) = std::str::from_utf8(h.value) {
                self.jar.store(v, from, now);
            }
        }
    }

    /// The user's heap bytes (variables and jar), for the memory estimate of many users.
    pub fn heap_bytes(&self) -> usize {
        self.vars.capacity() * std::mem::size_of::<String>()
            + self.vars.iter().map(String::capacity).sum::<usize>()
            + self.jar.heap_bytes()
    }

    pub fn jar(&self) -> &Jar {
        &self.jar
    }
}

/// How a variable's value is made safe where it lands.
#[derive(Clone, Copy)]
enum Escape {
    /// Request target: bytes that may not appear there are percent-encoded.
    Target,
    /// Header value: control characters (a line break would end the header) are dropped.
    Header,
    None,
}

fn render(t: &Template, vars: &[String], escape: Escape, out: &mut Vec<u8>) {
    use super::template::Part;
    for p in &t.parts {
        match p {
            Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
            Part::Var(id) => {
                let v = vars[*id].as_bytes();
                match escape {
                    Escape::None => out.extend_from_slice(v),
                    Escape::Header => out.extend(
                        v.iter()
                            .copied()
                            .filter(|&b| b == b'\t' || !(b < 0x20 || b == 0x7f)),
                    ),
                    Escape::Target => {
                        for &b in v {
                            if b <= b' ' || b >= 0x7f || b == b'#' {
                                out.push(b'%');
                                out.push(b"0123456789ABCDEF"[(b >> 4) as usize]);
                                out.push(b"0123456789ABCDEF"[(b & 15) as usize]);
                            } else {
                                out.push(b);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The path of a request target (query cut off), for cookie matching.
fn request_path(target: &[u8]) -> &str {
    let t = std::str::from_utf8(target).unwrap_or("/");
    t.split('?').next().unwrap_or("/")
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::file::tests::plan_of;

    const NOW: u64 = 1_700_000_000;

    fn text(u: &User, plan: &Plan, close: bool) -> String {
        let mut out = Vec::new();
        u.render(plan, close, NOW, &mut out);
        String::from_utf8(out).unwrap()
    }

    const LOGIN: &str = r#"
[vars]
user = "ann smith"

[[request]]
name = "login"
method = "POST"
url = "/login"
body = "user=${user}"
status = 200
[[request.extract]]
var = "tok"
regex = "csrf='([^']+)'"
[[request.extract]]
var = "id"
json = "/id"
[[request.extract]]
var = "trace"
header = "X-Trace"

[[request]]
name = "post"
method = "POST"
url = "/post/${user}?t=${tok}"
headers = ["X-Trace: ${trace}"]
body = "csrf=${tok}&id=${id}"
contains = "hello ${user}"
"#;

    #[test]
    fn a_user_logs_in_extracts_and_posts_with_its_cookie() {
        let plan = plan_of(LOGIN);
        let mut u = User::new(&plan, 0);
        u.begin(&plan, 0.0);
        assert_eq!(
            text(&u, &plan, false),
            "POST /login HTTP/1.1\r\nHost: 127.0.0.1:1\r\nUser-Agent: overload/0.1.0\r\n\
             Accept: */*\r\nContent-Length: 14\r\n\r\nuser=ann smith"
        );
        let head = b"HTTP/1.1 200 OK\r\nSet-Cookie: sid=s1; Path=/; HttpOnly\r\n\
                     X-Trace: abc\r\nContent-Length: 30\r\n\r\n";
        let body = br#"{"id": 7, "form": "csrf='T9'"}"#;
        assert_eq!(u.on_response(&plan, 200, head, body, NOW), Verdict::Ok);
        assert!(u.advance(&plan));
        let t = text(&u, &plan, true);
        assert!(
            t.starts_with("POST /post/ann%20smith?t=T9 HTTP/1.1\r\n"),
            "{t}"
        );
        assert!(t.contains("\r\nX-Trace: abc\r\nCookie: sid=s1\r\nContent-Length: 12\r\nConnection: close\r\n\r\ncsrf=T9&id=7"), "{t}");
        // The check reads the body.
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n";
        assert_eq!(
            u.on_response(&plan, 200, ok, b"hello ann smith", NOW),
            Verdict::Ok
        );
        assert_eq!(
            u.on_response(&plan, 200, ok, b"hello bob", NOW),
            Verdict::CheckFailed
        );
        assert!(!u.advance(&plan), "the iteration is over");
        // A new iteration starts with fresh variables and an empty jar.
        u.begin(&plan, 0.0);
        assert!(u.jar().is_empty());
        assert!(!text(&u, &plan, false).contains("Cookie"));
    }

    #[test]
    fn failed_checks_and_extractions() {
        let plan = plan_of(LOGIN);
        let mut u = User::new(&plan, 0);
        u.begin(&plan, 0.0);
        let head = b"HTTP/1.1 200 OK\r\nX-Trace: a\r\n\r\n";
        assert_eq!(
            u.on_response(&plan, 403, head, b"", NOW),
            Verdict::CheckFailed
        );
        assert_eq!(
            u.on_response(&plan, 200, head, br#"{"id":1}"#, NOW),
            Verdict::ExtractFailed,
            "no csrf in the body"
        );
        let no_header = b"HTTP/1.1 200 OK\r\n\r\n";
        assert_eq!(
            u.on_response(&plan, 200, no_header, br#"{"id":1,"x":"csrf='a'"}"#, NOW),
            Verdict::ExtractFailed
        );
        assert_eq!(
            u.on_response(&plan, 200, head, br#"not json csrf='a'"#, NOW),
            Verdict::ExtractFailed
        );
    }

    #[test]
    fn extracted_values_cannot_break_the_request() {
        let plan = plan_of(
            "[[request]]\nurl = \"/a\"\n[[request.extract]]\nvar = \"v\"\nregex = \"v=(.*)\"\n\
             [[request]]\nurl = \"/b?v=${v}\"\nheaders = [\"X-V: ${v}\"]\n",
        );
        let mut u = User::new(&plan, 0);
        u.begin(&plan, 0.0);
        let head = b"HTTP/1.1 200 OK\r\n\r\n";
        assert_eq!(
            u.on_response(&plan, 200, head, b"v=a b#\rX: 1\x7f", NOW),
            Verdict::Ok
        );
        u.advance(&plan);
        let t = text(&u, &plan, false);
        assert!(
            t.starts_with("GET /b?v=a%20b%23%0DX:%201%7F HTTP/1.1\r\n"),
            "{t}"
        );
        assert!(t.contains("\r\nX-V: a b#X: 1\r\n"), "{t}");
    }

    #[test]
    fn without_cookies_the_jar_stays_empty() {
        let plan = plan_of(&format!("cookies = false\n{LOGIN}"));
        let mut u = User::new(&plan, 0);
        u.begin(&plan, 0.0);
        let head = b"HTTP/1.1 200 OK\r\nSet-Cookie: sid=s1\r\nX-Trace: a\r\n\r\n";
        u.on_response(&plan, 200, head, br#"{"id":1,"x":"csrf='a'"}"#, NOW);
        u.advance(&plan);
        assert!(!text(&u, &plan, false).contains("Cookie"));
    }
}
