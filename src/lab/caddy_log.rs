//! Caddy's access log (`format json`, one object per request, as the caddy-fpm stack writes
//! it to `logs/access.log`): the requests it handled, by protocol, as the server counts
//! them: what a run's own counts are checked against.
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

#[derive(Deserialize)]
struct Line {
    msg: Option<String>,
    request: Option<Request>,
}

#[derive(Deserialize)]
struct Request {
    proto: Option<String>,
    uri: Option<String>,
}

/// Requests whose URI starts with `uri_prefix`, by `request.proto` (`HTTP/1.1`, `HTTP/2.0`,
/// `HTTP/3.0`). Lines that are not an access entry (or not JSON) are skipped.
pub fn count_by_protocol(log: &str, uri_prefix: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in log.lines() {
        let Ok(l) = serde_json::from_str::<Line>(line) else {
            continue;
        };
        let Some(r) = l
            .request
            .filter(|_| l.msg.as_deref() == Some("handled request"))
        else {
            continue;
        };
        if !r.uri.as_deref().unwrap_or("").starts_with(uri_prefix) {
            continue;
        }
        *counts.entry(r.proto.unwrap_or_default()).or_insert(0) += 1;
    }
    counts
}

/// Caddy's access log can grow large under load; more than this is not read.
const MAX_LOG: u64 = 1 << 30;

/// `count_by_protocol` of the log file at `path`.
pub fn count_file(path: &Path, uri_prefix: &str) -> crate::Result<BTreeMap<String, u64>> {
    let bytes = crate::fsutil::read_capped(path, MAX_LOG, "caddy access log")
        .map_err(crate::Error::runtime)?;
    Ok(count_by_protocol(
        &String::from_utf8_lossy(&bytes),
        uri_prefix,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_handled_requests_by_protocol() {
        // Lines as Caddy 2.6 writes them (shortened).
        let log = r#"{"level":"info","ts":1.0,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"127.0.0.1","proto":"HTTP/1.1","method":"GET","uri":"/cpu.php"},"status":200}
{"level":"info","ts":1.1,"logger":"http.log.access.log0","msg":"handled request","request":{"proto":"HTTP/2.0","method":"GET","uri":"/cpu.php?x=1"},"status":200}
{"level":"info","ts":1.2,"logger":"http.log.access.log0","msg":"handled request","request":{"proto":"HTTP/3.0","method":"GET","uri":"/cpu.php"},"status":200}
{"level":"info","ts":1.3,"logger":"http.log.access.log0","msg":"handled request","request":{"proto":"HTTP/3.0","method":"GET","uri":"/fpm-ping"},"status":200}
{"level":"warn","msg":"something else"}
not json at all
"#;
        let c = count_by_protocol(log, "/cpu.php");
        assert_eq!(c.get("HTTP/1.1"), Some(&1));
        assert_eq!(c.get("HTTP/2.0"), Some(&1));
        assert_eq!(c.get("HTTP/3.0"), Some(&1));
        assert_eq!(count_by_protocol(log, "/").values().sum::<u64>(), 4);
    }
}
