<?php
// The authenticated page: 401 without a logged-in session; else the user and the CSRF
// token the next POST must echo.
require __DIR__ . '/login-lib.php';
$user = lab_require_login();
lab_answer(200, lab_page($user, lab_csrf(), 'account'), 'text/html');
