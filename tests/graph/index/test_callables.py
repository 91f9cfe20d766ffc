"""PHP callables (`project/index/callables.py`): arrays and strings naming what another function calls."""

from __future__ import annotations

from project.index.parse import parse_source

CONTROLLER = rb"""<?php
namespace App\Http;

use App\Models\Cart;

class UserController extends Controller
{
    public function __construct(private Cart $cart) {}
    public function show(int $id): string { return ''; }
    public static function compare($a, $b): int { return 0; }
    public function run(array $xs, Cart $typed): array
    {
        usort($xs, [self::class, 'compare']);
        usort($xs, [static::class, "compare"]);
        add_action('init', [$this, 'show']);
        array_map([$typed, 'total'], $xs);
        array_walk($xs, array(__CLASS__, 'compare'));
        call_user_func('App\Models\Cart::total');
        array_map('App\format_price', $xs);
        register_shutdown_function([parent::class, 'flush']);
        $fn = new \Closure();
        return array_filter($xs, [Cart::class, 'valid']);
    }
}
"""
ROUTES = rb"""<?php
use App\Http\UserController;
use Illuminate\Support\Facades\Route;

function my_plugin_init() {}
add_action('init', 'my_plugin_init');
add_filter('the_title', '\my_plugin_init', 10, 2);
Route::get('/users/{id}', [UserController::class, 'show']);
Route::get(
    '/users',
    [UserController::class,
     'index'],
);
"""
# Data, not callables: no row may come of any of these.
DATA = rb"""<?php
namespace App;

class Report
{
    public function rows($key, $untyped): array
    {
        $pair = [$key, 'value'];
        $words = ['id', 'name'];
        $map = ['App\Cart' => 'total'];
        $three = [self::class, 'run', 'extra'];
        add_action('init', 'hook' . 'name');
        add_action("init", "{$key}_handler");
        add_action('the_hook_name_is_not_a_callable');
        usort($words, ['k' => self::class, 'compare']);
        strlen('App\Cart::total');
        $x = [$untyped, 'total'];
        array_map([$untyped, 'total'], $words);
        usort($words, [self::class, 'not a name']);
        usort($words, [Report::CONSTANT, 'compare']);
        usort($words, [$untyped::class, 'compare']);
        return [$pair, $words, $map, $three, $x];
    }
}
"""


def _calls(source: bytes, path: str = "app/X.php") -> set[tuple[str, str, int]]:
    parsed = parse_source(path, source)
    return {(r.source_fqn, r.target_fqn, r.line) for r in parsed.relations if r.kind == "calls"}


def test_arrays_name_a_method_through_imports_the_enclosing_class_and_typed_variables() -> None:
    run = "App\\Http\\UserController::run"
    calls = _calls(CONTROLLER)
    assert {
        (run, "App\\Http\\UserController::compare", 13),  # self::class
        (run, "App\\Http\\UserController::compare", 14),  # static::class, a double-quoted method name
        (run, "App\\Http\\UserController::show", 15),  # $this, given to a hook
        (run, "App\\Models\\Cart::total", 16),  # a parameter typed with an imported class
        (run, "App\\Http\\UserController::compare", 17),  # array(__CLASS__, ...) where a callable is taken
        (run, "App\\Models\\Cart::total", 18),  # a 'Class::method' string, fully qualified as PHP reads it
        (run, "App\\format_price", 19),  # a function's name where array_map takes its callable
        (run, "App\\Http\\Controller::flush", 20),  # parent::class
        (run, "App\\Models\\Cart::valid", 22),  # an imported class's ::class
    } <= calls


def test_file_level_callables_route_actions_and_hooked_functions() -> None:
    calls = _calls(ROUTES, "routes/web.php")
    assert ("", "my_plugin_init", 6) in calls  # WordPress: add_action's second argument
    assert ("", "my_plugin_init", 7) in calls  # a leading backslash
    assert ("", "App\\Http\\UserController::show", 8) in calls  # a Laravel route's action
    assert ("", "App\\Http\\UserController::index", 12) in calls  # at the line naming the method


def test_pairs_of_data_and_unknown_receivers_are_not_calls() -> None:
    """Only the calls written as calls: `usort(...)` itself, never what its arguments name."""
    called = {f"App\\{name}" for name in ("add_action", "usort", "strlen", "array_map")}
    assert {target for _, target, _ in _calls(DATA)} == called


def test_a_string_two_patterns_name_is_one_call() -> None:
    calls = [r for r in parse_source("x.php", b"<?php call_user_func('Shop\\\\Cart::total');").relations
             if r.target_fqn == "Shop\\Cart::total"]
    assert len(calls) == 1


LEGACY_ROUTES = rb"""<?php
Route::get('/', 'HomeController@index');
Route::post('/users', 'Admin\UserController@store');
\Illuminate\Support\Facades\Route::get('/x', '\Shop\Http\CartController@show');
Route::view('/welcome', 'welcome');
Route::get('/mail', 'mailto:someone@example.com');
Mailer::send('user@example.com');
"""


def test_laravel_string_actions_name_a_controller_method() -> None:
    """Laravel before 8 wrote a route's action as 'Controller@method', under App\\Http\\Controllers."""
    actions = {(target, line) for _, target, line in _calls(LEGACY_ROUTES, "routes/web.php") if "::" in target}
    assert actions == {
        ("App\\Http\\Controllers\\HomeController::index", 2),
        ("App\\Http\\Controllers\\Admin\\UserController::store", 3),
        ("Shop\\Http\\CartController::show", 4),  # fully qualified
        ("Route::get", 2), ("Route::post", 3), ("Illuminate\\Support\\Facades\\Route::get", 4), ("Route::view", 5),
        ("Route::get", 6), ("Mailer::send", 7),
    }


SUBSCRIBER = rb"""<?php
namespace App\EventListener;

class LocaleListener implements EventSubscriberInterface
{
    public function setDefaultLocale($event): void {}
    public function onKernelRequest($event): void {}
    public function onKernelFinishRequest($event): void {}
    public function onTerminate($event): void {}

    public static function getSubscribedEvents(): array
    {
        return [
            KernelEvents::REQUEST => [
                ['setDefaultLocale', 100],
                ['onKernelRequest', 16],
            ],
            KernelEvents::FINISH_REQUEST => [['onKernelFinishRequest', 0]],
            'onTerminate' => 'notAMethod',
            KernelEvents::TERMINATE => 'onTerminate',
        ];
    }
}
"""


def test_a_symfony_subscribers_handlers_are_called_from_get_subscribed_events() -> None:
    """The event dispatcher calls the methods getSubscribedEvents() names; nothing else names them."""
    source = "App\\EventListener\\LocaleListener::getSubscribedEvents"
    owner = "App\\EventListener\\LocaleListener"
    assert {(s, t, n) for s, t, n in _calls(SUBSCRIBER) if s == source} == {
        (source, f"{owner}::setDefaultLocale", 15), (source, f"{owner}::onKernelRequest", 16),
        (source, f"{owner}::onKernelFinishRequest", 18), (source, f"{owner}::onTerminate", 20),
    }  # not the event's name 'onTerminate' as a key (19), nor a string naming no method


RESOURCES = rb"""<?php
use App\Http\Controllers\PhotoController;

Route::resource('photos', PhotoController::class)->only(['index', 'show']);
Route::apiResource('posts', 'PostController');
Route::resource('tags', PhotoController::class)->except('destroy', 'edit');
"""


def test_laravel_resource_routes_call_the_actions_they_route() -> None:
    """`Route::resource` routes seven actions of a controller (`apiResource` five), narrowed by ->only() or
    ->except(): each is called from the route's line, and an action left out is not."""
    actions = sorted((line, target.rsplit("\\", 1)[-1]) for _, target, line in _calls(RESOURCES, "routes/web.php")
                     if "Controller::" in target)
    assert actions == [
        (4, "PhotoController::index"), (4, "PhotoController::show"),
        (5, "PostController::destroy"), (5, "PostController::index"), (5, "PostController::show"),
        (5, "PostController::store"), (5, "PostController::update"),
        (6, "PhotoController::create"), (6, "PhotoController::index"), (6, "PhotoController::show"),
        (6, "PhotoController::store"), (6, "PhotoController::update"),
    ]
