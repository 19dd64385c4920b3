<?php
// GET: the login form. POST user=&password=: checked against login-lib.php's table; the
// session (PHP files handler) then holds the user, and the page its CSRF token.
require __DIR__ . '/login-lib.php';
if ($_SERVER['REQUEST_METHOD'] !== 'POST') {
    lab_answer(200, "<!doctype html><form method=\"post\"><input name=\"user\">"
        . "<input name=\"password\" type=\"password\"><button>log in</button></form>\n", 'text/html');
}
$user = (string)($_POST['user'] ?? '');
if (!lab_user_ok($user, (string)($_POST['password'] ?? ''))) {
    lab_answer(401, "wrong user or password\n");
}
session_start();
$_SESSION['user'] = $user;
$csrf = lab_csrf();
lab_answer(200, lab_page($user, $csrf, 'welcome'), 'text/html');
