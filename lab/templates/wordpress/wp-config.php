<?php
// WordPress config of the overload lab, rendered by `overload lab up wordpress` (not
// Debian's /etc/wordpress lookup: the lab changes nothing in /etc).
define('DB_NAME', '{{DB_NAME}}');
define('DB_USER', 'lab');
define('DB_PASSWORD', 'labpass');
define('DB_HOST', '127.0.0.1:{{DB_PORT}}');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
$table_prefix = 'wp_';

// The port may change between starts; the database keeps no URL of its own.
define('WP_HOME', 'http://127.0.0.1:{{PORT}}');
define('WP_SITEURL', 'http://127.0.0.1:{{PORT}}');
define('WP_CONTENT_DIR', '{{WWW}}/wp-content');

// A measured request does only its own work: no cron run spawned from page views, no
// update checks, no traffic off the machine.
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_AUTO_UPDATE_CORE', false);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('WP_DEBUG', false);

// Random per prefix, made once at the first start (<dir>/data/secrets).
{{SALTS}}

// wp-load.php defines it first on a page view; php-cli's installer too.
if (!defined('ABSPATH')) {
    define('ABSPATH', __DIR__ . '/');
}
require_once ABSPATH . 'wp-settings.php';
