<?php
// Persistent pre-forked PHP HTTP workers for the overload lab (stack php-persistent).
// S3's idea: keep the application loaded in long-lived PHP processes that speak HTTP
// themselves, with nginx in front serving static files and balancing across them.
// The parent opens one unix socket per worker, forks the workers, and restarts any that
// dies. Each worker is blocking: one request at a time, one request per connection.
// A connection queued on a worker's socket outlives the worker: the parent holds the
// listening socket, so the replacement accepts it and only the request in hand is lost.
//
// Usage: php server.php SOCKET_DIR WORKERS DB_PORT SESSION_DIR [APP MAX_REQUESTS MAX_MEMORY_MB]
// APP ("-" for none) is a PHP file returning a boot function (symfony's worker.php): each
// worker calls it once and serves every request but /worker-status with the handler it
// returns. A worker that served MAX_REQUESTS (0: no limit) or whose memory passed
// MAX_MEMORY_MB exits after its answer and the parent starts a fresh one (PHP-PM's limits).
// Runs as www-data (overload starts it so); SIGTERM stops the parent and its workers.
declare(strict_types=1);

if ($argc !== 5 && $argc !== 8) {
    fwrite(STDERR, "usage: php server.php SOCKET_DIR WORKERS DB_PORT SESSION_DIR [APP MAX_REQUESTS MAX_MEMORY_MB]\n");
    exit(2);
}
$sockDir = $argv[1];
$workers = (int)$argv[2];
$dbPort = (int)$argv[3];
$sessionDir = $argv[4];
$appFile = ($argv[5] ?? '-') === '-' ? null : $argv[5];
$maxRequests = (int)($argv[6] ?? 0);
$maxMemory = (int)($argv[7] ?? 0) * 1024 * 1024;
if ($workers < 1 || $workers > 1024) {
    fwrite(STDERR, "WORKERS must be 1..1024, got {$argv[2]}\n");
    exit(2);
}
if ($maxRequests < 0 || $maxMemory < 0) {
    fwrite(STDERR, "MAX_REQUESTS and MAX_MEMORY_MB must be 0 or more\n");
    exit(2);
}
// What a worker's exit status says to the parent: recycled at a limit, not a crash.
const EXIT_RECYCLED = 3;

ini_set('session.save_path', $sessionDir);
// We read and write the cookie ourselves: the CLI SAPI sends no headers.
ini_set('session.use_cookies', '0');
ini_set('session.cache_limiter', '');

// ---- the application, loaded once per worker --------------------------------------------

/** S1's CPU page: append 1,000 rand() results. */
function app_cpu(): array
{
    $s = '';
    for ($i = 0; $i < 1000; $i++) {
        $s .= rand();
    }
    return [200, [], 'OK cpu n=1000 len=' . strlen($s) . ' crc=' . crc32($s) . "\n"];
}

/** S1's DB page over one connection kept for the worker's life (S3's saving). */
function app_db(array $get, int $dbPort): array
{
    static $db = null;
    $t0 = hrtime(true);
    $rows = max(1, min(10000, (int)($get['rows'] ?? 26)));
    try {
        if ($db === null) {
            $db = new mysqli('127.0.0.1', 'lab', 'labpass', 'lab', $dbPort);
        }
        $t1 = hrtime(true);
        $id = mt_rand(1, $rows);
        $row = $db->query("SELECT id, name, value FROM test1 WHERE id = $id")->fetch_assoc();
        $t2 = hrtime(true);
        $db->query(sprintf(
            "INSERT INTO test2 (page, row_id, connect_us, select_us) VALUES ('db.php', %d, %d, %d)",
            $id, intdiv($t1 - $t0, 1000), intdiv($t2 - $t1, 1000)
        ));
        if ($row === null) {
            return [500, [], "ERROR row $id missing\n"];
        }
        return [200, [], sprintf("OK db row=%d name=%s value=%d connect_us=%d select_us=%d\n",
            $row['id'], $row['name'], $row['value'], intdiv($t1 - $t0, 1000), intdiv($t2 - $t1, 1000))];
    } catch (mysqli_sql_exception $e) {
        $db = null; // reconnect next time (the server may have restarted)
        return [503, [], 'ERROR db: ' . $e->getMessage() . "\n"];
    }
}

/** S5's wait page: 1 s ± 0.25 s unless ?ms=&jitter= say otherwise. */
function app_wait(array $get): array
{
    $ms = max(0.0, min(600000.0, (float)($get['ms'] ?? 1000)));
    $jitter = max(0.0, min($ms, (float)($get['jitter'] ?? 250)));
    $sleep = $ms + (mt_rand() / mt_getrandmax() * 2.0 - 1.0) * $jitter;
    usleep((int)round($sleep * 1000.0));
    return [200, [], sprintf("OK wait ms=%.0f\n", $sleep)];
}

/** S2's file-session lock, with PHP's own files handler (the same flock as under FPM). */
function app_session(array $get, array $cookies): array
{
    $hold = max(0, min(600000, (int)($get['ms'] ?? 1000)));
    $id = $cookies['PHPSESSID'] ?? '';
    $new = !preg_match('/^[a-zA-Z0-9,-]{22,256}$/', $id);
    if ($new) {
        $id = session_create_id();
    }
    session_id($id);
    $t0 = hrtime(true);
    session_start();
    $waited = intdiv(hrtime(true) - $t0, 1000000);
    $_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
    usleep($hold * 1000);
    $n = $_SESSION['n'];
    session_write_close();
    $_SESSION = [];
    $headers = ['Cache-Control: no-store, no-cache, must-revalidate'];
    if ($new) {
        $headers[] = "Set-Cookie: PHPSESSID=$id; path=/";
    }
    return [200, $headers, sprintf("OK session id=%s n=%d held_ms=%d waited_ms=%d\n", $id, $n, $hold, $waited)];
}

function app_opcache(): array
{
    $st = function_exists('opcache_get_status') ? @opcache_get_status(false) : false;
    $body = json_encode([
        'sapi' => PHP_SAPI,
        'php' => PHP_VERSION,
        'opcache_loaded' => extension_loaded('Zend OPcache'),
        'opcache_enabled' => is_array($st) && !empty($st['opcache_enabled']),
        'cached_scripts' => is_array($st) ? $st['opcache_statistics']['num_cached_scripts'] : 0,
        'hits' => is_array($st) ? $st['opcache_statistics']['hits'] : 0,
        'misses' => is_array($st) ? $st['opcache_statistics']['misses'] : 0,
        'pid' => getmypid(),
    ]) . "\n";
    return [200, ['Content-Type: application/json', 'Cache-Control: no-store'], $body];
}

// ---- HTTP --------------------------------------------------------------------------------

/**
 * Reads one request; returns [method, path, query array, cookies, target, headers (lower-case
 * name => value), body] or null.
 */
function read_request($conn): ?array
{
    $buf = '';
    while (!str_contains($buf, "\r\n\r\n")) {
        $chunk = fread($conn, 8192);
        if ($chunk === false || $chunk === '') {
            return null;
        }
        $buf .= $chunk;
        if (strlen($buf) > 65536) {
            return null;
        }
    }
    [$head, $rest] = explode("\r\n\r\n", $buf, 2);
    $lines = explode("\r\n", $head);
    $parts = explode(' ', array_shift($lines));
    if (count($parts) !== 3) {
        return null;
    }
    [$method, $target] = $parts;
    $path = parse_url($target, PHP_URL_PATH) ?: '/';
    $get = [];
    parse_str((string)parse_url($target, PHP_URL_QUERY), $get);
    $cookies = [];
    $headers = [];
    $length = 0;
    foreach ($lines as $line) {
        [$name, $value] = array_map('trim', explode(':', $line, 2) + [1 => '']);
        $name = strtolower($name);
        $headers[$name] = $value;
        if ($name === 'cookie') {
            foreach (explode(';', $value) as $c) {
                [$k, $v] = array_map('trim', explode('=', $c, 2) + [1 => '']);
                $cookies[$k] = $v;
            }
        } elseif ($name === 'content-length') {
            $length = (int)$value;
        }
    }
    // Read a body of up to 1 MiB (the built-in apps ignore it; an APP gets it).
    $body = substr($rest, 0, 1 << 20);
    $left = min($length, 1 << 20) - strlen($body);
    while ($left > 0 && ($chunk = fread($conn, min(8192, $left))) !== false && $chunk !== '') {
        $left -= strlen($chunk);
        $body .= $chunk;
    }
    return [$method, $path, $get, $cookies, $target, $headers, $body];
}

/** The superglobals as PHP's CLI set them at start: restored after every APP request. */
function pristine_globals(): array
{
    static $saved = null;
    $saved ??= [$_GET, $_POST, $_COOKIE, $_FILES, $_REQUEST, $_SERVER];
    return $saved;
}

/**
 * One request through an APP handler, with what PHP-FPM would reset around it: the
 * superglobals set for this request and restored after, output echoed outside the
 * response discarded (an open buffer must not leak into the next answer), errors as 500.
 */
function app_request(callable $handler, array $req, int $index): array
{
    [$method, $path, $get, $cookies, $target, $headers, $body] = $req;
    $server = pristine_globals()[5];
    $server['REQUEST_METHOD'] = $method;
    $server['REQUEST_URI'] = $target;
    $server['QUERY_STRING'] = (string)parse_url($target, PHP_URL_QUERY);
    $server['SCRIPT_NAME'] = '/index.php';
    $server['SCRIPT_FILENAME'] = '/index.php';
    $server['PHP_SELF'] = '/index.php';
    $server['SERVER_PROTOCOL'] = 'HTTP/1.0';
    $server['REQUEST_TIME_FLOAT'] = microtime(true);
    $server['REQUEST_TIME'] = time();
    foreach ($headers as $name => $value) {
        $key = strtoupper(str_replace('-', '_', $name));
        $server[in_array($key, ['CONTENT_TYPE', 'CONTENT_LENGTH'], true) ? $key : "HTTP_$key"] = $value;
    }
    [$_GET, $_COOKIE, $_SERVER] = [$get, $cookies, $server];
    $_REQUEST = $get + $cookies;
    $level = ob_get_level();
    ob_start();
    try {
        $answer = $handler([$method, $target, $headers, $cookies, $body, $server]);
    } catch (Throwable $e) {
        fwrite(STDERR, "worker $index: " . get_class($e) . ': ' . $e->getMessage() . "\n");
        $answer = [500, [], "ERROR 500\n"];
    } finally {
        while (ob_get_level() > $level) {
            ob_end_clean();
        }
        [$_GET, $_POST, $_COOKIE, $_FILES, $_REQUEST, $_SERVER] = pristine_globals();
    }
    // respond() frames the answer itself.
    $answer[1] = array_values(array_filter($answer[1],
        fn($h) => !preg_match('/^(content-length|connection|transfer-encoding):/i', $h)));
    return $answer;
}

function respond($conn, int $status, array $headers, string $body): void
{
    $reason = [200 => 'OK', 404 => 'Not Found', 500 => 'Internal Server Error',
        503 => 'Service Unavailable'][$status] ?? 'Status';
    $hasType = false;
    foreach ($headers as $h) {
        $hasType = $hasType || stripos($h, 'content-type:') === 0;
    }
    if (!$hasType) {
        $headers[] = 'Content-Type: text/plain';
    }
    $out = "HTTP/1.0 $status $reason\r\n" . implode("\r\n", $headers) . ($headers ? "\r\n" : '')
        . 'Content-Length: ' . strlen($body) . "\r\nConnection: close\r\n\r\n" . $body;
    while ($out !== '') {
        $n = @fwrite($conn, $out);
        if ($n === false || $n === 0) {
            return;
        }
        $out = substr($out, $n);
    }
}

function worker_loop($server, int $index, int $dbPort, ?string $appFile, int $maxRequests, int $maxMemory): void
{
    $served = 0;
    $started = microtime(true);
    $handler = null;
    if ($appFile !== null) {
        pristine_globals();
        $boot = require $appFile;
        $handler = $boot();
    }
    while (true) {
        $conn = @stream_socket_accept($server, -1);
        if ($conn === false) {
            continue;
        }
        stream_set_timeout($conn, 30);
        $req = read_request($conn);
        if ($req !== null) {
            [, $path, $get, $cookies] = $req;
            $served++;
            [$status, $headers, $body] = match (true) {
                $path === '/worker-status' => [200, ['Content-Type: application/json'], json_encode([
                    'worker' => $index, 'pid' => getmypid(), 'served' => $served,
                    'memory' => memory_get_usage(), 'app' => $handler !== null,
                    'uptime_s' => round(microtime(true) - $started, 3)]) . "\n"],
                $handler !== null && $path !== '/opcache.php' => app_request($handler, $req, $index),
                default => builtin_app($path, $get, $cookies, $dbPort),
            };
            respond($conn, $status, $headers, $body);
        }
        fclose($conn);
        // The limits are checked between requests: the answer in hand is never cut.
        if (($maxRequests > 0 && $served >= $maxRequests)
            || ($maxMemory > 0 && memory_get_usage() > $maxMemory)) {
            exit(EXIT_RECYCLED);
        }
    }
}

/** The lab's own pages (cpu, db, wait, session, opcache), without an APP. */
function builtin_app(string $path, array $get, array $cookies, int $dbPort): array
{
    return match ($path) {
        '/cpu.php' => app_cpu(),
        '/db.php' => app_db($get, $dbPort),
        '/wait.php' => app_wait($get),
        '/session.php' => app_session($get, $cookies),
        '/opcache.php' => app_opcache(),
        default => [404, [], "not found\n"],
    };
}

// ---- supervisor --------------------------------------------------------------------------

$servers = [];
for ($i = 0; $i < $workers; $i++) {
    $path = "$sockDir/w$i.sock";
    @unlink($path);
    $ctx = stream_context_create(['socket' => ['backlog' => 511]]);
    $srv = @stream_socket_server("unix://$path", $errno, $errstr,
        STREAM_SERVER_BIND | STREAM_SERVER_LISTEN, $ctx);
    if ($srv === false) {
        fwrite(STDERR, "cannot listen on $path: $errstr\n");
        exit(1);
    }
    $servers[$i] = $srv;
}

$stopping = false;
// restart_syscalls=false: otherwise pcntl_wait() is resumed after the signal and the
// handler never runs, so the parent would never stop.
pcntl_signal(SIGTERM, function () use (&$stopping) { $stopping = true; }, false);
pcntl_signal(SIGINT, function () use (&$stopping) { $stopping = true; }, false);

$children = []; // pid => [worker index, start time]
$spawn = function (int $i) use (&$children, $servers, $dbPort, $appFile, $maxRequests, $maxMemory): void {
    $pid = pcntl_fork();
    if ($pid === -1) {
        fwrite(STDERR, "fork failed for worker $i\n");
        return;
    }
    if ($pid === 0) {
        // Workers die on SIGTERM at once; the handlers are the parent's business.
        pcntl_signal(SIGTERM, SIG_DFL);
        pcntl_signal(SIGINT, SIG_DFL);
        mt_srand(random_int(0, PHP_INT_MAX)); // forked workers must not share one sequence
        worker_loop($servers[$i], $i, $dbPort, $appFile, $maxRequests, $maxMemory);
        exit(0);
    }
    $children[$pid] = [$i, microtime(true)];
};

for ($i = 0; $i < $workers; $i++) {
    $spawn($i);
}
fwrite(STDOUT, "php-persistent: $workers workers on $sockDir, parent pid " . getmypid() . "\n");

while (!$stopping) {
    $pid = pcntl_wait($status);
    pcntl_signal_dispatch();
    if ($pid > 0 && isset($children[$pid])) {
        [$i, $since] = $children[$pid];
        unset($children[$pid]);
        if ($stopping) {
            break;
        }
        $recycled = pcntl_wifexited($status) && pcntl_wexitstatus($status) === EXIT_RECYCLED;
        $how = pcntl_wifsignaled($status) ? 'signal ' . pcntl_wtermsig($status)
            : 'exit ' . pcntl_wexitstatus($status);
        fwrite(STDOUT, $recycled ? "worker $i (pid $pid) reached its request or memory limit, restarting\n"
            : "worker $i (pid $pid) died ($how), restarting\n");
        if (!$recycled && microtime(true) - $since < 1.0) {
            usleep(200000); // a worker dying at once must not become a fork storm
        }
        $spawn($i);
    }
}

foreach (array_keys($children) as $pid) {
    posix_kill($pid, SIGTERM);
}
while ($children) {
    $pid = pcntl_wait($status);
    if ($pid > 0) {
        unset($children[$pid]);
    } elseif ($pid === -1 && pcntl_get_last_error() !== PCNTL_EINTR) {
        break;
    }
}
for ($i = 0; $i < $workers; $i++) {
    @unlink("$sockDir/w$i.sock");
}
exit(0);
