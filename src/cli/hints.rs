//! Hints for what users of other tools type first: a URL where a command belongs
//! (`overload URL`), a host without `http://`, a body sent without a method.
use crate::Error;

/// Whether a word the user typed where a command belongs is a URL or a host.
fn looks_like_target(arg: &str) -> bool {
    if arg.starts_with('-') || arg.contains(char::is_whitespace) {
        return false;
    }
    arg.contains("://")
        || arg.starts_with("localhost")
        || arg.contains(':')
        || (arg.contains('.') && !arg.ends_with(".toml"))
}

/// For `overload URL`: the command the user most likely meant.
pub fn not_a_command(arg: &str) -> Option<String> {
    looks_like_target(arg).then(|| {
        let url = if arg.contains("://") {
            arg.to_string()
        } else {
            format!("http://{arg}")
        };
        format!("'{arg}' is not a command; did you mean 'overload run {url}'?")
    })
}

/// A URL given without a scheme (`localhost:8080/x`): the usage error suggests `http://`.
pub fn check_scheme(urls: &[String]) -> crate::Result<()> {
    for u in urls {
        if !u.contains("://") && !u.is_empty() && !u.starts_with('-') {
            return Err(Error::usage(format!(
                "URL '{}' has no scheme; did you mean 'http://{}'?",
                crate::units::escape_controls(u),
                crate::units::escape_controls(u)
            )));
        }
    }
    Ok(())
}

/// `--body` without `-X` stays a GET (as curl's `-d` would not): say so, once.
pub fn body_without_method(body: bool, method_given: bool) -> Option<&'static str> {
    (body && !method_given)
        .then_some("--body without -X: the body is sent with GET; add -X POST (or PUT) to post it")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_where_the_command_belongs() {
        assert_eq!(
            not_a_command("http://127.0.0.1:8080/").unwrap(),
            "'http://127.0.0.1:8080/' is not a command; did you mean 'overload run http://127.0.0.1:8080/'?"
        );
        assert!(not_a_command("localhost:8080")
            .unwrap()
            .contains("'overload run http://localhost:8080'"));
        assert!(not_a_command("example.com").is_some());
        assert!(
            not_a_command("swep").is_none(),
            "a typo of a command is clap's to suggest"
        );
        assert!(not_a_command("--rate").is_none());
        assert!(not_a_command("matrix.toml").is_none());
    }

    #[test]
    fn bare_hosts_get_http_suggested() {
        let e = check_scheme(&["localhost:8080/x".into()])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "URL 'localhost:8080/x' has no scheme; did you mean 'http://localhost:8080/x'?"
        );
        assert!(check_scheme(&["http://h/".into(), "https://h/".into()]).is_ok());
    }

    #[test]
    fn body_warning_only_without_a_method() {
        assert!(body_without_method(true, false).is_some());
        assert!(body_without_method(true, true).is_none());
        assert!(body_without_method(false, false).is_none());
    }
}
