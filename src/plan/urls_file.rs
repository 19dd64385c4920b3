//! URL files in siege's format: one `URL` or `URL METHOD data` per line, `#` comments.
//! `data` starting with `<` names a file whose content is the body.
use super::request::{parse_method, RequestSpec, Url};
use crate::fsutil::{read_capped, shown, MAX_BODY_FILE, MAX_URLS_FILE};
use std::path::Path;

/// Reads and validates a URL file; errors name the file and line.
pub fn read_urls_file(path: &Path) -> Result<Vec<RequestSpec>, String> {
    let bytes = read_capped(path, MAX_URLS_FILE, "URL file")?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("URL file '{}' is not UTF-8 text", shown(path)))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let specs =
        parse_urls(&text, base).map_err(|(line, msg)| format!("{}:{line}: {msg}", shown(path)))?;
    if specs.is_empty() {
        return Err(format!("URL file '{}' holds no URL", path.display()));
    }
    Ok(specs)
}

/// Parses URL-file text; `Err((line number, message))`. Body files resolve against `base`.
pub fn parse_urls(text: &str, base: &Path) -> Result<Vec<RequestSpec>, (usize, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let n = i + 1;
        let mut parts = line.splitn(3, char::is_whitespace);
        let url = Url::parse(parts.next().unwrap_or("")).map_err(|e| (n, e))?;
        let (method, body) = match parts.next() {
            None => ("GET".to_string(), None),
            Some(m) => {
                let method = parse_method(m).map_err(|e| (n, e))?;
                let data = parts.next().map(str::trim).unwrap_or("");
                let body = if let Some(file) = data.strip_prefix('<') {
                    let p = base.join(file.trim());
                    Some(read_capped(&p, MAX_BODY_FILE, "body file").map_err(|e| (n, e))?)
                } else if data.is_empty() {
                    None
                } else {
                    Some(data.as_bytes().to_vec())
                };
                (method, body)
            }
        };
        let mut headers = Vec::new();
        if body.is_some() && method == "POST" {
            // siege sends form data; say so, as a server would need it to parse the body.
            headers.push((
                "Content-Type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ));
        }
        out.push(RequestSpec {
            method,
            url,
            headers,
            body,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siege_format() {
        let text = "# comment\n\nhttp://a/x\nhttp://a/login POST user=1&p=2\nhttp://a/put PUT\n";
        let v = parse_urls(text, Path::new(".")).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].method, "GET");
        assert_eq!(v[1].method, "POST");
        assert_eq!(v[1].body.as_deref(), Some(&b"user=1&p=2"[..]));
        assert_eq!(v[2].method, "PUT");
        assert!(v[2].body.is_none());
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_urls("http://a/\nnot a url\n", Path::new(".")).unwrap_err();
        assert_eq!(e.0, 2);
        let e = parse_urls("http://a/ P@ST x\n", Path::new(".")).unwrap_err();
        assert_eq!(e.0, 1);
        let e = parse_urls("http://a/ POST </nonexistent/file\n", Path::new(".")).unwrap_err();
        assert!(e.1.contains("/nonexistent/file"));
    }
}
