//! The request judgement of what listens (the agent, the live page) on arbitrary bytes: the
//! server core's head and body parsing (`overload::listen`) with each service's routes, as a
//! connection would meet them, without I/O. Input: byte 0 = piece size; the rest = what a
//! peer sent. Oracle: no panic; the answer is decided by the first complete request, so once a
//! prefix is answered the whole input gets the same status; without the token the agent
//! answers nothing with 2xx, and the live page answers 200 only at its secret path.
#![no_main]
use libfuzzer_sys::fuzz_target;
use overload::observe::{ObserveConfig, Observer};
use std::sync::OnceLock;
use std::time::Duration;

const TOKEN: &[u8] = b"fuzz-token-0123456789";
const SECRET: &str = "/00112233445566778899aabbccddeeff/";

fn status(answer: &[u8]) -> u16 {
    std::str::from_utf8(&answer[9..12]).unwrap().parse().unwrap()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece, req)) = data.split_first() else {
        return;
    };
    static OBS: OnceLock<overload::observe::ObserverHandle> = OnceLock::new();
    let obs = OBS.get_or_init(|| {
        Observer::start(ObserveConfig {
            every: Duration::from_secs(3600),
            ..Default::default()
        })
        .expect("observer")
    });
    let dir = std::path::Path::new("/nonexistent/overload-fuzz-live");
    let step = usize::from(piece).max(1);

    // The agent.
    let whole = overload::observe::agent::handle(req, obs, TOKEN, None);
    if let Some(a) = &whole {
        if (200..300).contains(&status(a)) {
            assert!(contains(req, TOKEN), "2xx without the token");
        }
    }
    let mut end = 0;
    while end < req.len() {
        end = (end + step).min(req.len());
        if let Some(a) = overload::observe::agent::handle(&req[..end], obs, TOKEN, None) {
            let w = whole.as_ref().expect("a prefix answered, the whole not");
            assert_eq!(status(&a), status(w), "the first complete request decides");
            break;
        }
    }

    // The live page.
    let page = overload::live::respond(req, SECRET, dir);
    if let Some(r) = &page {
        if r.status == 200 {
            assert!(contains(req, SECRET.trim_end_matches('/').as_bytes()));
        }
    }
    let mut end = 0;
    while end < req.len() {
        end = (end + step).min(req.len());
        if let Some(r) = overload::live::respond(&req[..end], SECRET, dir) {
            let w = page.as_ref().expect("a prefix answered, the whole not");
            assert_eq!(r.status, w.status, "the first complete request decides");
            break;
        }
    }
});
