//! The login application of every PHP web stack's document root (nginx-fpm, apache-prefork,
//! apache-event-fpm, nginx-fpm-cache): a form login over PHP's file sessions, an
//! authenticated page with a CSRF token, a POST that must echo it, and `slow.php`, whose
//! session lock is S2's effect (`?close=early` releases it). docs/lab.md describes the pages;
//! experiments/s2-sessions.toml loads them.

/// The pages, as (file name, contents); none has a placeholder.
pub(super) const PAGES: &[(&str, &str)] = &[
    ("login-lib.php", include_str!("../../lab/www/login-lib.php")),
    ("login.php", include_str!("../../lab/www/login.php")),
    ("account.php", include_str!("../../lab/www/account.php")),
    ("post.php", include_str!("../../lab/www/post.php")),
    ("slow.php", include_str!("../../lab/www/slow.php")),
];
