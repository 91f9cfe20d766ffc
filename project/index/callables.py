"""PHP callables: the arrays and strings that name a method or function another function will call.

PHP passes code as data: `usort($xs, [self::class, 'compare'])`, `add_action('init', [$this, 'boot'])`,
`Route::get('/users/{id}', [UserController::class, 'show'])`, `array_map('App\\fmt', $xs)`,
`call_user_func('App\\Cart::total')`. The method or function is called later by whoever received it, so
none of these is a call expression, and without them a controller action, an event handler or a
sort comparator had no caller in the graph: an agent asking "what calls UserController::show?" was
told nothing does. Each callable becomes a `calls` row at the line that names it, resolved as a call
would be: the class of `X::class` through the file's imports, `self`/`static`/`parent` and `$this`
through the enclosing class, a variable only when its class is statically known (`[$anything,
'value']` is as often a pair of data as a callable, so an unknown one gives no row, not a guess by
name). A string names a class or function fully qualified, as PHP reads callable strings.

A Laravel route's action written as a string (`Route::get('/', 'HomeController@index')`, the form
before Laravel 8) names a controller under `App\\Http\\Controllers`, where Laravel's route provider
put it by default, unless the string is fully qualified; an application that moved its controllers
gets no row for them, not a wrong one.

A bare function name in a string is a callable only where the function receiving it takes one: the
parameter positions of PHP's internal functions typed `callable` (read from PHP 8.2's reflection:
`ReflectionFunction::getParameters()`), and the hook functions of WordPress, whose plugins register
nearly all of their code so. Elsewhere `'init'` is a string. A namespaced class in a string array
(`['App\\Cart', 'total']`) is a callable; a pair of plain words (`['id', 'name']`) is data.
"""

from __future__ import annotations

import tree_sitter

from project.index import php_grammar
from project.index.receivers import CallSite, RelationRow, TextOf, caller_of, class_name

# The callable parameter's position -> the functions that take a callable there.
_TAKERS = {
    0: (
        # PHP 8.2's internal functions with a parameter typed callable, first position
        "array_map", "call_user_func", "call_user_func_array", "forward_static_call",
        "forward_static_call_array", "header_register_callback", "register_shutdown_function",
        "register_tick_function", "set_error_handler", "set_exception_handler", "spl_autoload_register",
        "spl_autoload_unregister", "unregister_tick_function",
    ),
    1: (
        # second position
        "array_filter", "array_reduce", "array_walk", "array_walk_recursive", "iterator_apply",
        "mb_ereg_replace_callback", "preg_replace_callback", "uasort", "uksort", "usort",
        # WordPress: add_action('init', 'my_plugin_init')
        "add_action", "add_filter", "add_shortcode", "has_action", "has_filter", "register_activation_hook",
        "register_deactivation_hook", "register_uninstall_hook", "remove_action", "remove_filter",
    ),
}
# what a callable pair is made of: its owner (`X::class`, `$x`) and its method's name (a string); the query's
# patterns and `may_match` read both from here
_OWNERS = ("class_constant_access_expression", "variable_name")
_STRINGS = ("string", "encapsed_string")
_STRING = "[" + " ".join(f"({kind})" for kind in _STRINGS) + "]"
_OWNER = "[" + " ".join(f"({kind})" for kind in _OWNERS) + "]"
_CALLABLE = "[(string) (encapsed_string) (array_creation_expression)]"


def _takers(position: int) -> str:
    names = " ".join(f'"{name}"' for name in _TAKERS[position])
    skipped = "(argument) . " * position
    return (f"(function_call_expression function: (name) @_taker{position} (#any-of? @_taker{position} {names}) "
            f"arguments: (arguments . {skipped}(argument {_CALLABLE} @callable)))")


# Patterns of `parse._QUERY`; a capture named `_…` only serves a predicate. The anchors (`.`) keep an array
# to exactly two elements without keys. A string callable is read only where a function takes one: the
# same pattern for any string argument (`call_user_func('App\\Cart::total')` anywhere) made Symfony's query
# 7% slower (1.03 s -> 1.10 s) for 85 strings, nearly all of them test data.
QUERY = "\n".join((
    _takers(0),
    _takers(1),
    # anywhere: [Cart::class, 'total'], [$this, 'total'], array($this, 'total'), [$cart, 'total']; where a
    # function takes a callable, also array('Cart', 'total') and array(__CLASS__, 'total')
    f"(array_creation_expression . (array_element_initializer . {_OWNER} .)"
    f" . (array_element_initializer . {_STRING} .) .) @callable",
    # Symfony's event subscribers: the method names getSubscribedEvents() returns
    '(method_declaration name: (name) @_subscriber (#eq? @_subscriber "getSubscribedEvents")'
    " body: (compound_statement (return_statement (array_creation_expression) @subscribed)))",
    # Laravel's resource routes: Route::resource('photos', PhotoController::class) routes seven actions
    '(scoped_call_expression scope: [(name) (qualified_name)] @_route (#match? @_route "Route$")'
    ' name: (name) @_resource (#any-of? @_resource "resource" "apiResource")'
    " arguments: (arguments . (argument) . (argument"
    f" [(class_constant_access_expression) {_STRING[1:-1]}]))) @resource",
    # Laravel's routes before version 8: Route::get('/', 'HomeController@index')
    f'(scoped_call_expression scope: [(name) (qualified_name)] @_route (#match? @_route "Route$")'
    f' arguments: (arguments (argument {_STRING} @callable (#match? @callable "@"))))',
))
# where Laravel's RouteServiceProvider puts a string action's controller unless it is fully qualified
LARAVEL_CONTROLLERS = "App\\Http\\Controllers\\"
NODE_TYPES = frozenset({"array_creation_expression", "string", "encapsed_string"})
_TAKER_NAMES = frozenset(name.encode() for names in _TAKERS.values() for name in names)


def may_match(node: tree_sitter.Node) -> bool:
    """Whether a pattern of QUERY could match starting at `node`: true wherever one does (the query
    still decides), and cheap. It lets the extractor run QUERY on a few thousand nodes of a code base
    found by the C walk (parse.py) instead of over every node of every tree."""
    kind = node.type
    if kind == "array_creation_expression":  # the anchored pair: [X::class or $x, 'name'], nothing else
        if node.named_child_count != 2:
            return False
        owner, method = node.named_children
        return _only(owner, _OWNERS) and _only(method, _STRINGS)
    if kind == "function_call_expression":  # _takers: a function known to take a callable
        function = node.child_by_field_id(php_grammar.FUNCTION)
        return function is not None and function.type == "name" and function.text in _TAKER_NAMES
    if kind == "method_declaration":
        name = node.child_by_field_id(php_grammar.NAME)
        return name is not None and name.text == b"getSubscribedEvents"
    if kind == "scoped_call_expression":  # the two Route patterns
        scope = node.child_by_field_id(php_grammar.SCOPE)
        return scope is not None and b"Route" in (scope.text or b"")
    return False


def _only(element: tree_sitter.Node, kinds: tuple[str, ...]) -> bool:
    """An array element of one named child, of one of `kinds` (`(array_element_initializer . (kind) .)`)."""
    if element.named_child_count != 1:
        return False
    child = element.named_child(0)
    return child is not None and child.type in kinds


def resolve_callable(site: CallSite, text: TextOf) -> RelationRow | None:
    """A `calls` row for the method or function a callable names, or None when it names none knowably."""
    node = site.node
    if node.type == "array_creation_expression":
        return _pair(site, text, node)
    value = _literal(text(node))
    controller, at, action = value.partition("@")
    if at:  # a Laravel route's 'Admin\UserController@store'
        return _row(site, _controller(controller), action, node)
    owner, separator, method = value.partition("::")
    if separator:
        lowered = owner.lower()
        if lowered in ("self", "static", "parent"):
            owner = class_name(lowered, site.names, site.cls)
        elif _class(owner):
            owner = owner.lstrip("\\")
        else:
            return None
        return _row(site, owner, method, node)
    function = value.lstrip("\\")
    if not _class(function):  # a function's name has the form of a class's
        return None
    line = node.start_point[0] + 1
    return (site.path, "calls", caller_of(site), function.rsplit("\\", 1)[-1], function, "", line)


# the actions of a resource controller, as Laravel's ResourceRegistrar routes them
_ACTIONS = {
    "resource": ("index", "create", "store", "show", "edit", "update", "destroy"),
    "apiresource": ("index", "store", "show", "update", "destroy"),
}


def resource_actions(site: CallSite, text: TextOf) -> list[RelationRow]:
    """The controller actions `Route::resource('photos', PhotoController::class)` routes, each a `calls`
    row at the controller's line; `->only([...])` and `->except([...])` right after it narrow them."""
    node = site.node
    verb, arguments = node.child_by_field_id(php_grammar.NAME), node.child_by_field_id(php_grammar.ARGUMENTS)
    if verb is None or arguments is None or len(arguments.named_children) < 2:
        return []
    given = arguments.named_children[1].named_children
    if not given:
        return []
    controller = given[0]
    if controller.type == "class_constant_access_expression":
        owner = _class_constant(site, text, controller)
    else:
        owner = _controller(_literal(text(controller)))
    if not owner:
        return []
    actions = list(_ACTIONS.get(text(verb).lower(), ()))
    chained = node.parent  # found by walking down from the root: only for the few resource routes
    if chained is not None and chained.type == "member_call_expression":
        narrowing = chained.child_by_field_id(php_grammar.NAME)
        listed = chained.child_by_field_id(php_grammar.ARGUMENTS)
        names = {_literal(text(s)) for s in _strings(listed)} if listed is not None else set()
        if narrowing is not None and text(narrowing).lower() == "only":
            actions = [a for a in actions if a in names]
        elif narrowing is not None and text(narrowing).lower() == "except":
            actions = [a for a in actions if a not in names]
    line = controller.start_point[0] + 1
    return [(site.path, "calls", caller_of(site), a, f"{owner}::{a}", "", line) for a in actions]


def _strings(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The string literals among `node`'s arguments and the elements of an array there (`->only(['index'])`,
    `->only('index', 'show')`)."""
    found = []
    for argument in node.named_children:
        for value in argument.named_children:
            if value.type in ("string", "encapsed_string"):
                found.append(value)
            elif value.type == "array_creation_expression":
                found += [e.named_children[-1] for e in value.named_children
                          if e.named_children and e.named_children[-1].type in ("string", "encapsed_string")]
    return found


def subscribed(site: CallSite, text: TextOf, methods: set[str]) -> list[RelationRow]:
    """The methods a Symfony event subscriber's getSubscribedEvents() names, each a `calls` row from it:
    `[KernelEvents::REQUEST => 'onKernelRequest']`, `=> ['onKernelRequest', 32]`, `=> [['setLocale',
    100], ['onKernelRequest', 16]]`. The event dispatcher calls them; nothing else names them. A string
    counts where a value stands (not an event's name as a key) and when it is a method of the class
    (`methods`, lower-cased: PHP's method names have no case)."""
    cls = site.cls
    if cls is None or cls.anonymous:
        return []
    found: list[RelationRow] = []
    arrays = [site.node]
    while arrays and len(found) < 512:
        for element in arrays.pop().named_children:
            parts = element.named_children
            value = parts[-1] if parts else None
            if value is None:
                continue
            if value.type == "array_creation_expression":
                arrays.append(value)
            elif value.type in ("string", "encapsed_string"):
                name = _literal(text(value))
                target = f"{cls.fqn}::{name}"
                if name.isidentifier() and target.lower() in methods:
                    found.append((site.path, "calls", caller_of(site), name, target, "", value.start_point[0] + 1))
    return found


def _pair(site: CallSite, text: TextOf, node: tree_sitter.Node) -> RelationRow | None:
    elements = node.named_children
    if len(elements) != 2 or any(element.named_child_count != 1 for element in elements):
        return None  # a function that takes a callable was given a list or a map
    first, second = (element.named_children[0] for element in elements)
    kind = first.type
    owner = ""
    if kind == "class_constant_access_expression":
        owner = _class_constant(site, text, first)
    elif kind == "variable_name":
        name = text(first)[1:]
        if name == "this":
            owner = class_name("self", site.names, site.cls)
        elif site.func is not None:
            owner = site.func.type_of(name)
    elif kind in ("string", "encapsed_string"):  # given to a function that takes a callable
        owner = _literal(text(first)).lstrip("\\")
        owner = owner if _class(owner) else ""
    elif kind == "name" and text(first) == "__CLASS__":
        owner = class_name("self", site.names, site.cls)
    if not owner:
        return None
    return _row(site, owner, _literal(text(second)), second)


def _class_constant(site: CallSite, text: TextOf, node: tree_sitter.Node) -> str:
    """The class `X::class` names (through the file's imports; `self::class` the enclosing one), else ""."""
    parts = node.named_children
    if len(parts) != 2 or text(parts[1]).lower() != "class" or parts[0].type == "variable_name":
        return ""  # `X::CONSTANT`, `$object::class`
    return class_name(text(parts[0]), site.names, site.cls)


def _controller(name: str) -> str:
    """The controller a Laravel route names by a string: under `LARAVEL_CONTROLLERS` unless fully
    qualified (`\\Shop\\CartController`, `App\\…`); "" for what is not a class's name (`mailto:x@y`)."""
    if not _class(name) or not name[:1].isupper() and name[:1] != "\\":
        return ""
    return name.lstrip("\\") if name.startswith(("\\", "App\\")) else LARAVEL_CONTROLLERS + name


def _row(site: CallSite, owner: str, method: str, node: tree_sitter.Node) -> RelationRow | None:
    if not owner or not method.isidentifier():
        return None
    return (site.path, "calls", caller_of(site), method, f"{owner}::{method}", "", node.start_point[0] + 1)


def _literal(raw: str) -> str:
    """A quoted string's value, or "" when it is built at run time (`"{$prefix}_init"`)."""
    if len(raw) < 2 or raw[0] not in "'\"" or raw[-1] != raw[0] or raw[0] == '"' and "$" in raw:
        return ""
    return raw[1:-1].replace("\\\\", "\\")


def _class(name: str) -> bool:
    """Whether `name` has the form of a (qualified) class or function name: `App\\Cart`, `\\Cart`, `cart`."""
    parts = name.removeprefix("\\").split("\\")
    return all(part.isidentifier() for part in parts)
