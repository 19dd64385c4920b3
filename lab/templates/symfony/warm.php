<?php
// Warms the Symfony app's cache before the stack serves (as `cache:warmup` would): the
// compiled container and the compiled templates, written as www-data. Prints "warmed".
declare(strict_types=1);

require '{{APP}}';

$kernel = new App\Kernel('prod', false);
$kernel->boot();
$twig = $kernel->getContainer()->get('twig');
$twig->load('item.html.twig');
echo "warmed\n";
