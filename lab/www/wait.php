<?php
// S5's wait1.php: sleep 1 s ± 0.25 s (uniform), almost no CPU, so any response time above
// the sleep is the cost of process management and queueing. ?ms=1000&jitter=250 tune it.
$ms = max(0.0, min(600000.0, (float)($_GET['ms'] ?? 1000)));
$jitter = max(0.0, min($ms, (float)($_GET['jitter'] ?? 250)));
$sleep = $ms + (mt_rand() / mt_getrandmax() * 2.0 - 1.0) * $jitter;
usleep((int)round($sleep * 1000.0));
header('Content-Type: text/plain');
printf("OK wait ms=%.0f\n", $sleep);
