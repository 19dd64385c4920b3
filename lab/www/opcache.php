<?php
// Whether OPcache is really on for this SAPI: the knob is checked here, not trusted.
// no-store keeps it out of nginx's fastcgi_cache, so it always reports the live state.
header('Cache-Control: no-store');
header('Content-Type: application/json');
$st = function_exists('opcache_get_status') ? @opcache_get_status(false) : false;
echo json_encode([
    'sapi' => PHP_SAPI,
    'php' => PHP_VERSION,
    'opcache_loaded' => extension_loaded('Zend OPcache'),
    'opcache_enabled' => is_array($st) && !empty($st['opcache_enabled']),
    'cached_scripts' => is_array($st) ? $st['opcache_statistics']['num_cached_scripts'] : 0,
    'hits' => is_array($st) ? $st['opcache_statistics']['hits'] : 0,
    'misses' => is_array($st) ? $st['opcache_statistics']['misses'] : 0,
    'pid' => getmypid(),
]), "\n";
