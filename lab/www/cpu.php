<?php
// S1's CPU-bound page: append 1,000 rand() results to a string (about 2 ms per page in 2009).
$s = '';
for ($i = 0; $i < 1000; $i++) {
    $s .= rand();
}
header('Content-Type: text/plain');
echo 'OK cpu n=1000 len=', strlen($s), ' crc=', crc32($s), "\n";
