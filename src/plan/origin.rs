//! Where a recorded request goes (HAR, httperf's session log): one rule for every import, so
//! a file someone else wrote cannot send load to a host the operator did not name.
//!
//! With a URL argument, a recording loads that server only: a path goes to it, and so does an
//! absolute URL of the recording's own origin (the first request's: the site it was recorded
//! on, or the URL argument's when the first request is a path) or of the URL argument's origin.
//! Any other origin (analytics, CDNs, a host slipped into the file) is left out, counted and
//! named in the run's note. Without a URL argument, absolute URLs go where they were recorded
//! (the operator named no other server) and a path is an error.
use crate::url::Url;

/// Origins named in the note at most; the rest are counted.
const NAMED: usize = 5;

#[derive(Debug, Default)]
pub struct Origins {
    base: Option<Url>,
    /// The recording's own origin, once its first request is placed.
    home: Option<String>,
    /// Distinct origins left out, the first [`NAMED`] of them.
    foreign: Vec<String>,
    /// Requests left out.
    pub left_out: u64,
}

impl Origins {
    pub fn new(base: Option<&Url>) -> Origins {
        Origins {
            base: base.cloned(),
            ..Origins::default()
        }
    }

    /// Where `recorded` (an absolute URL or a path) goes: `Ok(Some(url))` to send it,
    /// `Ok(None)` left out (another origin); `Err`: not a URL, or a path with no server.
    pub fn place(&mut self, recorded: &str) -> Result<Option<Url>, String> {
        if recorded.starts_with('/') {
            let Some(b) = &self.base else {
                return Err(format!(
                    "'{}' is a path: give the server as a URL argument",
                    crate::units::escape_controls(recorded)
                ));
            };
            self.home.get_or_insert_with(|| b.origin());
            return Url::parse(&format!("{}{recorded}", b.origin())).map(Some);
        }
        let url = Url::parse(recorded)?;
        let Some(b) = &self.base else {
            return Ok(Some(url));
        };
        let origin = url.origin();
        let home = self.home.get_or_insert_with(|| origin.clone());
        if origin == *home || origin == b.origin() {
            return Ok(Some(Url {
                target: url.target,
                ..b.clone()
            }));
        }
        self.left_out += 1;
        if self.foreign.len() < NAMED && !self.foreign.contains(&origin) {
            self.foreign.push(origin);
        }
        Ok(None)
    }

    /// What was left out, for the run's note; None when nothing was.
    pub fn note(&self) -> Option<String> {
        (self.left_out > 0).then(|| {
            format!(
                "{} request(s) to {}{} left out (a URL argument stands for the recording's own \
                 origin only)",
                self.left_out,
                self.foreign.join(", "),
                if self.foreign.len() == NAMED {
                    ", …"
                } else {
                    ""
                }
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(o: &mut Origins, u: &str) -> Option<String> {
        o.place(u)
            .unwrap()
            .map(|u| format!("{}{}", u.origin(), u.target))
    }

    #[test]
    fn one_origin_per_recording_with_a_url_argument() {
        let base = Url::parse("http://127.0.0.1:8080/ignored").unwrap();
        // Recorded on a site: its origin becomes the URL argument's, others are left out.
        let mut o = Origins::new(Some(&base));
        assert_eq!(
            placed(&mut o, "https://shop.example/a?x=1").as_deref(),
            Some("http://127.0.0.1:8080/a?x=1")
        );
        assert_eq!(placed(&mut o, "http://cdn.example/img.png"), None);
        assert_eq!(
            placed(&mut o, "/b").as_deref(),
            Some("http://127.0.0.1:8080/b")
        );
        assert_eq!(
            placed(&mut o, "http://127.0.0.1:8080/c").as_deref(),
            Some("http://127.0.0.1:8080/c"),
            "the URL argument's own origin"
        );
        assert_eq!(o.left_out, 1);
        assert!(o.note().unwrap().contains("http://cdn.example left out"));
        // A path first: the recording's origin is the URL argument's.
        let mut o = Origins::new(Some(&base));
        assert!(placed(&mut o, "/a").is_some());
        assert_eq!(placed(&mut o, "http://127.0.0.2:8080/x"), None);
        assert!(o.place("ftp://x/").is_err());
    }

    #[test]
    fn without_a_url_argument_absolute_urls_go_where_recorded() {
        let mut o = Origins::new(None);
        assert_eq!(
            placed(&mut o, "http://127.0.0.2:9/x").as_deref(),
            Some("http://127.0.0.2:9/x")
        );
        assert!(o.place("/a").unwrap_err().contains("is a path"));
        assert_eq!(o.note(), None);
    }
}
