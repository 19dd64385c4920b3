<?php
// POST csrf=&user=: 401 without a session, 403 when the token is not the session's or the
// user named is not the one logged in (a session seen by another user), else 200.
require __DIR__ . '/login-lib.php';
$user = lab_require_login();
if (!hash_equals(lab_csrf(), (string)($_POST['csrf'] ?? ''))) {
    lab_answer(403, "bad csrf token\n");
}
if (isset($_POST['user']) && $_POST['user'] !== $user) {
    lab_answer(403, "this session is " . $user . "'s, not " . (string)$_POST['user'] . "'s\n");
}
$_SESSION['posts'] = ($_SESSION['posts'] ?? 0) + 1;
lab_answer(200, "posted by $user (" . $_SESSION['posts'] . " posts)\n");
