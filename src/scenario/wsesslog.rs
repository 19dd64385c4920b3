//! `--wsesslog FILE`: httperf's session log (S1 loaded its stacks with it) as scenarios, one
//! per session, equally weighted.
//!
//! ```text
//! # a comment
//! /index.html think=2.0          a request: its path, then attributes
//!     /logo.png                  indented: fetched with the request above (a burst)
//! /login method=POST contents='user=ann&pw=x'
//!                                a blank line ends the session
//! /search?q=shoes think=1.5
//! ```
//! Attributes: `method=` (GET and HEAD unless `--allow-unsafe-methods`), `contents=` (the
//! body; quoted with `'` or `"`, `\n`, `\t`, `\\` and `\'` escapes), `think=` (seconds after
//! the request's burst; default the run's `--think`). A path goes to the URL argument's server,
//! and so does an absolute URL of the recording's origin; other origins are left out and named
//! in the note (`plan::origin`, the rule of every import). Without a URL argument, absolute
//! URLs go where they point. Any other line is an error naming the file and the line.
//!
//! Bursts: a page's indented members become its scenario step's `burst`: fetched in parallel
//! after the page's answer, as httperf does (on up to 6 connections per server), and the
//! page's think time follows the whole burst.
use super::import::{is_safe, Recorded};
use crate::url::Url;
use std::path::Path;
use std::time::Duration;

/// Largest session log read.
pub const MAX_WSESSLOG: u64 = 64 << 20;

/// One session: its requests in the order they are sent.
pub type Session = Vec<Recorded>;

/// The sessions, and a note on the requests left out (None: none).
pub type Read = (Vec<Session>, Option<String>);

pub fn read(path: &Path, base: Option<&Url>, allow_unsafe: bool) -> Result<Read, String> {
    let bytes = crate::fsutil::read_capped(path, MAX_WSESSLOG, "--wsesslog")?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{}: not UTF-8 text", crate::fsutil::shown(path)))?;
    parse(&text, &crate::fsutil::shown(path), base, allow_unsafe)
}

/// Parses a session log; `file` names it in messages (`s.log:7: …`).
pub fn parse(
    text: &str,
    file: &str,
    base: Option<&Url>,
    allow_unsafe: bool,
) -> Result<Read, String> {
    let mut origins = crate::plan::origin::Origins::new(base);
    let mut sessions: Vec<Session> = Vec::new();
    let mut current: Session = Vec::new();
    // Whether the session has a request whose burst indented lines may join.
    let mut page = false;
    // Whether that request was left out (another origin): its burst is left out with it.
    let mut page_left_out = false;
    for (i, line) in text.lines().enumerate() {
        let at = format!("{file}:{}", i + 1);
        if line.trim().is_empty() {
            if !current.is_empty() {
                sessions.push(std::mem::take(&mut current));
            }
            page = false;
            page_left_out = false;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let member = line.starts_with([' ', '\t']);
        let (uri, method, body, think) = parse_line(line.trim(), &at)?;
        if !allow_unsafe && !is_safe(&method) {
            return Err(format!(
                "{at}: method {method}: GET and HEAD only unless --allow-unsafe-methods"
            ));
        }
        if member && page_left_out {
            continue;
        }
        let Some(url) = origins.place(&uri).map_err(|e| format!("{at}: {e}"))? else {
            // Another origin: not sent, nor the burst under it.
            if !member {
                page = true;
                page_left_out = true;
            }
            continue;
        };
        if !member {
            page_left_out = false;
        }
        let r = Recorded {
            method,
            url,
            headers: Vec::new(),
            body,
            think: None,
            burst: Vec::new(),
        };
        if member {
            if !page {
                return Err(format!(
                    "{at}: an indented line (a burst member) with no request above it"
                ));
            }
            if think.is_some() {
                return Err(format!(
                    "{at}: think= belongs to the burst's request, not to its members"
                ));
            }
            if let Some(page) = current.last_mut() {
                page.burst.push(r);
            }
        } else {
            current.push(Recorded { think, ..r });
            page = true;
        }
    }
    if !current.is_empty() {
        sessions.push(current);
    }
    let note = origins.note().map(|n| format!("{file}: {n}"));
    if sessions.is_empty() {
        return Err(match note {
            Some(n) => format!("{n}: no request left to send"),
            None => format!("{file}: no session (no request line)"),
        });
    }
    Ok((sessions, note))
}

/// `URI [method=M] [contents=TEXT] [think=SECONDS]`.
type Line = (String, String, Option<String>, Option<Duration>);

fn parse_line(line: &str, at: &str) -> Result<Line, String> {
    let (uri, mut rest) = line.split_at(line.find([' ', '\t']).unwrap_or(line.len()));
    let (mut method, mut body, mut think) = ("GET".to_string(), None, None);
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let (key, after) = rest.split_once('=').ok_or_else(|| {
            format!(
                "{at}: '{}': expected key=value (method, contents, think)",
                crate::units::escape_controls(rest)
            )
        })?;
        let (value, after) = value(after).map_err(|e| format!("{at}: {key}: {e}"))?;
        rest = after;
        match key {
            "method" => {
                method = crate::plan::parse_method(&value).map_err(|e| format!("{at}: {e}"))?;
            }
            "contents" => body = Some(value),
            "think" => {
                let s: f64 = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && (0.0..=3600.0).contains(s))
                    .ok_or_else(|| {
                        format!("{at}: think='{value}': seconds from 0 to 3600, e.g. 2.5")
                    })?;
                think = Some(Duration::from_secs_f64(s));
            }
            other => {
                return Err(format!(
                    "{at}: unknown attribute '{}' (method, contents, think)",
                    crate::units::escape_controls(other)
                ))
            }
        }
    }
    Ok((uri.to_string(), method, body, think))
}

/// A value: up to the next blank, or quoted with `'` or `"` (backslash escapes inside).
fn value(s: &str) -> Result<(String, &str), String> {
    let Some(q) = s.chars().next().filter(|c| *c == '\'' || *c == '"') else {
        let end = s.find([' ', '\t']).unwrap_or(s.len());
        return Ok((s[..end].to_string(), &s[end..]));
    };
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, 't')) => out.push('\t'),
                Some((_, c)) => out.push(c),
                None => break,
            },
            c if c == q => return Ok((out, &s[1 + i + 1..])),
            c => out.push(c),
        }
    }
    Err(format!("no closing {q}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = include_str!("../../tests/data/sessions.wsesslog");

    fn base() -> Url {
        Url::parse("http://127.0.0.1:8080").unwrap()
    }

    /// Each request as `METHOD target [think]`, its burst's members after it as `+ target`.
    fn shown(s: &Session) -> Vec<String> {
        s.iter()
            .flat_map(|r| {
                let think = r.think.map_or(String::new(), |t| format!(" {t:?}"));
                std::iter::once(format!("{} {}{think}", r.method, r.url.target))
                    .chain(r.burst.iter().map(|m| format!("+ {}", m.url.target)))
            })
            .collect()
    }

    #[test]
    fn sessions_their_bursts_and_think_times() {
        let (s, note) = parse(LOG, "s.log", Some(&base()), true).unwrap();
        assert_eq!(note, None);
        assert_eq!(s.len(), 2, "blank lines, however many, separate sessions");
        assert_eq!(
            shown(&s[0]),
            [
                "GET /index.html 2s",
                "+ /pict1.gif",
                "+ /pict2.gif",
                "POST /login",
                "+ /pict3.gif"
            ]
        );
        assert_eq!(s[0][1].body.as_deref(), Some("user=ann&pw=it's"));
        assert_eq!(
            shown(&s[1]),
            ["POST /search", "HEAD /item?id=7 1.5s", "GET /done"]
        );
        assert_eq!(s[1][0].body.as_deref(), Some("q=a b\nline 2"));
        assert_eq!(s[1][0].url.origin(), "http://127.0.0.1:8080");
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let e = |t: &str| parse(t, "s.log", Some(&base()), true).unwrap_err();
        // Another origin than the recording's: left out, named in the note.
        let (s, note) = parse(
            "/a\n  /img\nhttp://127.0.0.2:1/x\n  /its-img\n/c\n",
            "s.log",
            Some(&base()),
            true,
        )
        .unwrap();
        assert_eq!(
            shown(&s[0]),
            ["GET /a", "+ /img", "GET /c"],
            "with its burst"
        );
        assert!(note
            .unwrap()
            .contains("1 request(s) to http://127.0.0.2:1 left out"));
        assert_eq!(
            e("/a\n/b colour=red\n"),
            "s.log:2: unknown attribute 'colour' (method, contents, think)"
        );
        assert_eq!(
            e("# c\n  /img.png\n"),
            "s.log:2: an indented line (a burst member) with no request above it"
        );
        assert!(e("/a think=soon\n").starts_with("s.log:1: think='soon'"));
        assert!(e("/a contents='open\n").starts_with("s.log:1: contents: no closing '"));
        assert!(e("/a method=G@T\n").starts_with("s.log:1: invalid HTTP method"));
        assert!(e("/a\n  /b think=1\n").starts_with("s.log:2: think= belongs"));
        assert!(e("ftp://x/\n").starts_with("s.log:1: 'ftp://x/': only http://"));
        assert_eq!(
            e("# only a comment\n\n"),
            "s.log: no session (no request line)"
        );
        let unsafe_post = parse("/a\n/b method=POST\n", "s.log", Some(&base()), false);
        assert_eq!(
            unsafe_post.unwrap_err(),
            "s.log:2: method POST: GET and HEAD only unless --allow-unsafe-methods"
        );
        let no_server = parse("/a\n", "s.log", None, false).unwrap_err();
        assert!(no_server.contains("is a path"), "{no_server}");
    }
}
