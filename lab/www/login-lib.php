<?php
// The lab's login application (login.php, account.php, post.php, slow.php): PHP's own file
// sessions, so S2's lock shows as it does in production. Included, never served alone.
declare(strict_types=1);

// The id a client sends is taken as it is (PHP's default, said here so a stricter php.ini
// cannot change it): two tabs of one browser, modelled as two scenario users sending the
// same PHPSESSID, then share one session and its lock.
ini_set('session.use_strict_mode', '0');
ini_set('session.use_only_cookies', '1');

/** The user table: user1 … user1000, password "pw-" + the name (a lab, not a secret). */
function lab_user_ok(string $user, string $password): bool
{
    if (!preg_match('/^user([1-9][0-9]{0,3})$/', $user, $m) || (int)$m[1] > 1000) {
        return false;
    }
    return hash_equals('pw-' . $user, $password);
}

/** Starts the session; answers 401 and stops unless a user has logged in on it. */
function lab_require_login(): string
{
    session_start();
    $user = $_SESSION['user'] ?? null;
    if (!is_string($user)) {
        session_write_close();
        lab_answer(401, "not logged in\n");
    }
    return $user;
}

/** The session's CSRF token, made once per session (two tabs share it). */
function lab_csrf(): string
{
    if (!isset($_SESSION['csrf'])) {
        $_SESSION['csrf'] = bin2hex(random_bytes(16));
    }
    return $_SESSION['csrf'];
}

function lab_answer(int $status, string $body, string $type = 'text/plain'): never
{
    http_response_code($status);
    header("Content-Type: $type");
    // A user's page: no shared cache may keep it (nginx-fpm-cache also bypasses PHPSESSID).
    header('Cache-Control: private, no-store');
    echo $body;
    exit;
}

function lab_page(string $user, string $csrf, string $title): string
{
    $u = htmlspecialchars($user);
    return "<!doctype html><title>$title</title><h1>$title</h1><p>user: $u</p>\n"
        . "<form method=\"post\" action=\"/post.php\">"
        . "<input type=\"hidden\" name=\"csrf\" value=\"$csrf\">"
        . "<input name=\"text\"><button>post</button></form>\n";
}
