<?php
// S2's file-session lock: PHP's files handler holds an exclusive lock on the session file
// from session_start() to session_write_close(), so a second request of the same user waits.
// ?ms=1000 is how long this request holds the session (default 1 s).
$hold = max(0, min(600000, (int)($_GET['ms'] ?? 1000)));
$t0 = hrtime(true);
session_start();
$waited = intdiv(hrtime(true) - $t0, 1000000);
$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
usleep($hold * 1000);
$n = $_SESSION['n'];
session_write_close();
header('Content-Type: text/plain');
printf("OK session id=%s n=%d held_ms=%d waited_ms=%d\n", session_id(), $n, $hold, $waited);
