<?php
// The Symfony app's front controller under PHP-FPM (stack symfony --web nginx-fpm): like
// any PHP-FPM application, every request loads the code, boots the kernel (the compiled
// container from var/cache) and builds the services it needs, then throws them away.
declare(strict_types=1);

require '{{APP}}';

use Symfony\Component\HttpFoundation\Request;

$kernel = new App\Kernel('prod', false);
$request = Request::createFromGlobals();
$response = $kernel->handle($request);
$response->send();
$kernel->terminate($request, $response);
