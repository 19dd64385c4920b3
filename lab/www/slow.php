<?php
// S2's session lock: a logged-in page that works ?ms=500 milliseconds (sleeping: no CPU).
// PHP's files handler locks the session file from session_start() to the end of the script,
// so the same session's other requests wait behind this one. ?close=early calls
// session_write_close() before the work, as a page that only reads its session should.
require __DIR__ . '/login-lib.php';
$ms = max(0, min(600000, (int)($_GET['ms'] ?? 500)));
$t0 = hrtime(true);
$user = lab_require_login();
$waited = intdiv(hrtime(true) - $t0, 1000000);
$early = ($_GET['close'] ?? '') === 'early';
if ($early) {
    session_write_close();
}
usleep($ms * 1000);
lab_answer(200, sprintf("OK slow user=%s ms=%d lock=%s waited_ms=%d\n", $user, $ms,
    $early ? 'released' : 'held', $waited));
