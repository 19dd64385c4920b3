<?php
// The lab's Symfony application (stack symfony, S3's framework), on Debian's Symfony 5.4
// components: an HttpKernel whose container is compiled once into var/cache, routes, a
// controller that reads one row from the lab's MariaDB and renders it with Twig.
// Loaded by the front controller (www/index.php: booted on every request under PHP-FPM)
// and by the persistent workers (worker.php: booted once per worker).
declare(strict_types=1);

namespace App;

require_once '/usr/share/php/Symfony/Component/HttpKernel/autoload.php';
require_once '/usr/share/php/Symfony/Component/DependencyInjection/autoload.php';
require_once '/usr/share/php/Symfony/Component/Config/autoload.php';
require_once '/usr/share/php/Symfony/Component/Routing/autoload.php';
require_once '/usr/share/php/Symfony/Contracts/Service/autoload.php';
require_once '/usr/share/php/Twig/autoload.php';

use Symfony\Component\Config\Loader\LoaderInterface;
use Symfony\Component\DependencyInjection\Argument\IteratorArgument;
use Symfony\Component\DependencyInjection\ContainerBuilder;
use Symfony\Component\DependencyInjection\Reference;
use Symfony\Component\EventDispatcher\EventDispatcher;
use Symfony\Component\EventDispatcher\EventSubscriberInterface;
use Symfony\Component\HttpFoundation\RequestStack;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\HttpKernel\Controller\ArgumentResolver;
use Symfony\Component\HttpKernel\Controller\ContainerControllerResolver;
use Symfony\Component\HttpKernel\DependencyInjection\ResettableServicePass;
use Symfony\Component\HttpKernel\DependencyInjection\ServicesResetter;
use Symfony\Component\HttpKernel\Event\ExceptionEvent;
use Symfony\Component\HttpKernel\EventListener\RouterListener;
use Symfony\Component\HttpKernel\Exception\HttpExceptionInterface;
use Symfony\Component\HttpKernel\Exception\NotFoundHttpException;
use Symfony\Component\HttpKernel\HttpKernel;
use Symfony\Component\HttpKernel\Kernel as BaseKernel;
use Symfony\Component\HttpKernel\KernelEvents;
use Symfony\Component\Routing\Matcher\UrlMatcher;
use Symfony\Component\Routing\RequestContext;
use Symfony\Component\Routing\Route;
use Symfony\Component\Routing\RouteCollection;
use Symfony\Contracts\Service\ResetInterface;
use Twig\Environment;
use Twig\Loader\FilesystemLoader;

/** Settings rendered by `overload lab up symfony`. */
const VAR_DIR = '{{VAR}}';
const TEMPLATES = '{{TEMPLATES}}';
const DB_PORT = {{DB_PORT}};
/** Rows of the lab's test1 table (schema.sql). */
const ROWS = 10000;

/** No bundles: every service is registered in build(), the container compiled once. */
final class Kernel extends BaseKernel
{
    public function registerBundles(): iterable
    {
        return [];
    }

    public function registerContainerConfiguration(LoaderInterface $loader): void
    {
    }

    public function getProjectDir(): string
    {
        return \dirname(__DIR__);
    }

    public function getCacheDir(): string
    {
        return VAR_DIR . '/cache/' . $this->environment;
    }

    public function getLogDir(): string
    {
        return VAR_DIR . '/log';
    }

    protected function build(ContainerBuilder $c): void
    {
        $c->register('kernel')->setSynthetic(true)->setPublic(true);
        $c->register('request_stack', RequestStack::class)->setPublic(true);
        $c->register('router.context', RequestContext::class);
        $c->register('routes', RouteCollection::class)->setFactory([Routes::class, 'all']);
        $c->register('router.matcher', UrlMatcher::class)
            ->setArguments([new Reference('routes'), new Reference('router.context')]);
        $c->register('router_listener', RouterListener::class)
            ->setArguments([new Reference('router.matcher'), new Reference('request_stack'),
                new Reference('router.context')]);
        $c->register('error_subscriber', ErrorSubscriber::class);
        $c->register('event_dispatcher', EventDispatcher::class)
            ->addMethodCall('addSubscriber', [new Reference('router_listener')])
            ->addMethodCall('addSubscriber', [new Reference('error_subscriber')]);
        $c->register('controller_resolver', ContainerControllerResolver::class)
            ->setArguments([new Reference('service_container')]);
        $c->register('argument_resolver', ArgumentResolver::class);
        $c->register('http_kernel', HttpKernel::class)->setPublic(true)->setArguments([
            new Reference('event_dispatcher'), new Reference('controller_resolver'),
            new Reference('request_stack'), new Reference('argument_resolver'),
        ]);
        $c->register('twig.loader', FilesystemLoader::class)->setArguments([TEMPLATES]);
        $c->register('twig', Environment::class)->setArguments([new Reference('twig.loader'), [
            'cache' => VAR_DIR . '/cache/twig',
            'strict_variables' => true,
            // Templates change only when the lab is re-rendered, which clears the cache.
            'auto_reload' => false,
        ]])->setPublic(true);
        $c->register('db', Database::class)->setArguments([DB_PORT]);
        // Per-request state: the persistent workers reset it between requests (kernel.reset).
        $c->register('query_log', QueryLog::class)->addTag('kernel.reset', ['method' => 'reset']);
        $c->register(ItemController::class, ItemController::class)->setPublic(true)
            ->setArguments([new Reference('db'), new Reference('query_log'), new Reference('twig')]);
        // Symfony's own mechanism: the kernel calls services_resetter between requests.
        $c->register('services_resetter', ServicesResetter::class)->setPublic(true)
            ->setArguments([new IteratorArgument([]), []]);
        $c->addCompilerPass(new ResettableServicePass());
    }
}

final class Routes
{
    public static function all(): RouteCollection
    {
        $r = new RouteCollection();
        $r->add('home', new Route('/', ['_controller' => ItemController::class . '::home']));
        $r->add('item', new Route('/item/{id}', ['_controller' => ItemController::class . '::show'],
            ['id' => '\d{1,9}']));
        return $r;
    }
}

/** 404 for unknown routes, 500 for the rest: a plain-text page, as the lab's other apps. */
final class ErrorSubscriber implements EventSubscriberInterface
{
    public static function getSubscribedEvents(): array
    {
        return [KernelEvents::EXCEPTION => 'onException'];
    }

    public function onException(ExceptionEvent $event): void
    {
        $e = $event->getThrowable();
        $status = $e instanceof HttpExceptionInterface ? $e->getStatusCode() : 500;
        if ($status >= 500) {
            error_log('symfony: ' . $e);
        }
        $event->setResponse(new Response("ERROR $status " . $e->getMessage() . "\n", $status,
            ['Content-Type' => 'text/plain']));
    }
}

/** One MariaDB connection per process: per request under FPM, per worker life when persistent. */
final class Database
{
    private ?\mysqli $link = null;
    public int $connects = 0;

    public function __construct(private int $port)
    {
    }

    public function row(int $id): ?array
    {
        try {
            if ($this->link === null) {
                $this->link = new \mysqli('127.0.0.1', 'lab', 'labpass', 'lab', $this->port);
                $this->connects++;
            }
            $st = $this->link->prepare('SELECT id, name, value, body FROM test1 WHERE id = ?');
            $st->bind_param('i', $id);
            $st->execute();
            $row = $st->get_result()->fetch_assoc();
            $st->close();
            return $row;
        } catch (\mysqli_sql_exception $e) {
            $this->link = null; // reconnect next time: the server may have restarted
            throw $e;
        }
    }
}

/** The queries of the current request: must be empty at the start of each one. */
final class QueryLog implements ResetInterface
{
    public array $queries = [];

    public function add(string $q): void
    {
        $this->queries[] = $q;
    }

    public function reset(): void
    {
        $this->queries = [];
    }
}

final class ItemController
{
    public function __construct(private Database $db, private QueryLog $log, private Environment $twig)
    {
    }

    public function home(): Response
    {
        return $this->show(1 + (int)(mt_rand() % ROWS));
    }

    public function show(int $id): Response
    {
        $this->log->add("test1 #$id");
        $row = $this->db->row($id);
        if ($row === null) {
            throw new NotFoundHttpException("no row $id");
        }
        return new Response($this->twig->render('item.html.twig', [
            'row' => $row,
            'queries' => $this->log->queries,
            'pid' => getmypid(),
            'connects' => $this->db->connects,
            'sapi' => PHP_SAPI,
        ]), 200, ['Content-Type' => 'text/html; charset=UTF-8']);
    }
}
