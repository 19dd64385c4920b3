<?php
// overload audit's probe page: the PHP settings the audit checks, as JSON (docs/audit.md).
// Read-only: it prints ini values and OPcache's memory figures and changes nothing. It names
// the server's configuration, so serve it on loopback or behind access control only.
header('Cache-Control: no-store');
header('Content-Type: application/json');
$st = function_exists('opcache_get_status') ? @opcache_get_status(false) : false;
$mem = is_array($st) && isset($st['memory_usage']) ? $st['memory_usage'] : null;
echo json_encode([
    'sapi' => PHP_SAPI,
    'php' => PHP_VERSION,
    'opcache_loaded' => extension_loaded('Zend OPcache'),
    'opcache_enabled' => is_array($st) && !empty($st['opcache_enabled']),
    'opcache_memory_consumption' => ini_get('opcache.memory_consumption') ?: null,
    'opcache_used_memory' => $mem ? $mem['used_memory'] : null,
    'opcache_free_memory' => $mem ? $mem['free_memory'] : null,
    'opcache_wasted_memory' => $mem ? $mem['wasted_memory'] : null,
    'opcache_cache_full' => is_array($st) && !empty($st['cache_full']),
    'realpath_cache_size' => (string) ini_get('realpath_cache_size'),
    'open_basedir' => (string) ini_get('open_basedir'),
    'memory_limit' => (string) ini_get('memory_limit'),
    'session_save_handler' => (string) ini_get('session.save_handler'),
]), "\n";
