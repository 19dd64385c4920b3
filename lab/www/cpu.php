<?php
// S1's CPU-bound page: append 1,000 rand() results to a string (about 2 ms per page in 2009).
// ?n=N appends N instead (1..1,000,000): today's CPUs need more to be CPU-bound.
$n = max(1, min(1000000, (int)($_GET['n'] ?? 1000)));
$s = '';
for ($i = 0; $i < $n; $i++) {
    $s .= rand();
}
header('Content-Type: text/plain');
echo 'OK cpu n=', $n, ' len=', strlen($s), ' crc=', crc32($s), "\n";
