<?php
// WordPress's own installer, run through php-cli by `overload lab up wordpress` (no
// browser): the tables, options, roles and first posts exactly as the web installer makes
// them. Arguments: the admin password.
if (PHP_SAPI !== 'cli') {
    exit(1);
}
define('WP_INSTALLING', true);
$_SERVER['HTTP_HOST'] = '127.0.0.1';
$_SERVER['REQUEST_URI'] = '/';
// The installer mails the admin; there is no mail on the lab machine.
function wp_new_blog_notification($blog_title, $blog_url, $user_id, $password) {}
require '{{WWW}}/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';
if (!is_blog_installed()) {
    $r = wp_install('overload lab', 'admin', 'admin@lab.invalid', false, '', $argv[1]);
    if (is_wp_error($r)) {
        fwrite(STDERR, $r->get_error_message() . "\n");
        exit(1);
    }
}
// Debian's theme package; plain permalinks (/?p=N) need no rewrite rules in any front.
switch_theme('twentytwentyone');
update_option('permalink_structure', '');
update_option('blog_public', '0');
echo "installed\n";
