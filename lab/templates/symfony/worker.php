<?php
// The Symfony app in a persistent worker (stack symfony --web php-persistent): server.php
// loads this file once per worker and calls the function it returns once, which boots the
// kernel; the handler it gives back then serves many requests with that booted kernel.
// Between requests: kernel->terminate, then the kernel's own services reset (Symfony's
// services_resetter, run by the next handle()); server.php resets output buffers and
// superglobals around each call.
declare(strict_types=1);

require '{{APP}}';

use Symfony\Component\HttpFoundation\Request;

return function (): callable {
    $kernel = new App\Kernel('prod', false);
    $kernel->boot();
    // [method, target, headers (lower-case name => value), cookies, body, server vars]
    return function (array $req) use ($kernel): array {
        [$method, $target, $headers, $cookies, $body, $server] = $req;
        $get = [];
        parse_str((string)parse_url($target, PHP_URL_QUERY), $get);
        $post = [];
        if ($method === 'POST' && str_starts_with($headers['content-type'] ?? '', 'application/x-www-form-urlencoded')) {
            parse_str($body, $post);
        }
        $request = new Request($get, $post, [], $cookies, [], $server, $body);
        $response = $kernel->handle($request);
        $out = [];
        foreach ($response->headers->allPreserveCaseWithoutCookies() as $name => $values) {
            foreach ($values as $v) {
                $out[] = "$name: $v";
            }
        }
        foreach ($response->headers->getCookies() as $cookie) {
            $out[] = 'Set-Cookie: ' . $cookie;
        }
        $status = $response->getStatusCode();
        $content = (string)$response->getContent();
        $kernel->terminate($request, $response);
        return [$status, $out, $content];
    };
};
