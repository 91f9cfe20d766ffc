"""The code graph of Python and TypeScript repositories through the running service.

An analyze task on a Python repository (a label delivery over HTTP to the real receiver, a burst arq
worker on the real Redis, the repository cloned over HTTP) and a `/review` of a TypeScript change:
each role asks the graph for the callers of a function the task is about, and `forgebot trace TASK`,
run as a user types it, shows the tool answering with the real call sites (through a package's
re-export in Python, through a namespace import and a CommonJS `require` in TypeScript/JavaScript).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from foundation.settings import Settings
from graph.schemas import AcceptanceCriterion, Analysis, Decomposition, Evidence, Finding, Review
from tests.e2e.conftest import allow_http_git, work
from tests.e2e.review_harness import Models, deliver, fake_change, prepare
from tests.e2e.review_harness import work as review_work
from tests.e2e.test_memory_service import _deliver, _task_ids, _trace
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.git_http import create_git_server
from tests.fakes.model_server import ScriptedModel, answer, scripted
from tests.fakes.server import serving
from tests.graph.conftest import init_repo
from tests.graph.review.conftest import ChangeRepo, git
from tests.graph.runtime.script import call, done
from tests.intake.payloads import serve_samples

POLYGLOT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "polyglot"
REPO = "Codertocat/Hello-World"


def _copy(target: Path, parts: tuple[str, ...], config: str) -> Path:
    target.mkdir(parents=True)
    for part in parts:
        source = POLYGLOT / part
        if source.is_dir():
            shutil.copytree(source, target / part)
        else:
            shutil.copy(source, target / part)
    (target / ".forgebot.yml").write_text(config)
    return target


@pytest.fixture
def python_origin(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[str]:
    """The fixture's Python shop as the served repository (branches `main` and `master`)."""
    yield from _served_shop(tmp_path, settings, fake_forge, {})


# what a real (or hostile) repository also holds: a generated query chain (3,000 calls: the extractor
# recursed once per call and the whole index build stopped), a vendored minified bundle, a 100,000-level
# generated chain, and a symlink out of the checkout (the base build raised "outside the repository")
LINK_OUT = {"shop/secrets.py": "/etc/hostname"}
HOSTILE = {
    "shop/generated_query.py": "q = (Query()\n" + "    .where(1)\n" * 3_000 + ")\n",
    "shop/deep.py": "q = (Query()\n" + " .w()\n" * 100_000 + ")\n",
    "static/vendor.min.js": "".join(f"function q{i}(a){{return a+{i}}}" for i in range(6_000)),
}


@pytest.fixture
def hostile_origin(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState) -> Iterator[str]:
    """The Python shop with `HOSTILE`'s files committed beside it."""
    yield from _served_shop(tmp_path, settings, fake_forge, HOSTILE, LINK_OUT)


def _served_shop(tmp_path: Path, settings: Settings, fake_forge: FakeForgeState,
                 extra: dict[str, str], links: dict[str, str] | None = None) -> Iterator[str]:
    work_dir = _copy(tmp_path / "work", ("shop", "app.py", "tests"),
                     "profile: python\ncommands:\n  install: false\n  test: false\n  lint: false\n")
    for name, text in extra.items():
        (work_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (work_dir / name).write_text(text)
    for name, target in (links or {}).items():
        (work_dir / name).symlink_to(target)
    work_dir = init_repo(work_dir)
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work_dir), str(served / "app.git")], check=True)
    subprocess.run(["git", "-C", str(served / "app.git"), "branch", "-f", "master", "main"], check=True,
                   capture_output=True)
    with serving(create_git_server(served, None)) as server:
        settings.workspace.git_hosts = (server.url,)
        serve_samples(fake_forge, settings, clone_url=f"{server.url}/app.git", git_dir=str(served / "app.git"))
        yield f"{server.url}/app.git"


def _tool_lines(story: str, role: str, tool: str) -> list[str]:
    return [line for line in story.splitlines() if f"[{role}] {tool}(" in line]


def _answers(received: list[list[BaseMessage]], tool: str) -> list[str]:
    """Each answer of the tool to the model, in order (once each: every turn resends the earlier ones)."""
    found = [str(m.content) for messages in received for m in messages if isinstance(m, ToolMessage) and m.name == tool]
    return list(dict.fromkeys(found))


def _callers(received: list[list[BaseMessage]], tool: str, nth: int = 0) -> set[tuple[str, int, str]]:
    """The resolved call sites of the tool's `nth` answer to the model (the whole answer; the trace shows
    its start)."""
    text = _answers(received, tool)[nth]
    answer = json.loads(text[text.index("{"):text.rindex("}") + 1])
    return {(s["path"], s["line"], s["caller"]) for s in answer["sites"] if s["certainty"] == "resolved"}


async def test_an_analysis_of_a_python_repository_finds_callers_through_the_graph(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, python_origin: str
) -> None:
    await _analyze_save(settings, redis_url, fake_forge, python_origin)


async def test_a_model_asking_by_the_short_python_name_gets_the_callers_and_how_it_was_read(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, python_origin: str
) -> None:
    """`Repository.save`, as a model (or a user) writes a Python method first: before, the answer was empty
    with a note naming `shop.base.Repository::save`, and the analysis spent a turn asking again."""
    script = await _analyze_save(settings, redis_url, fake_forge, python_origin, fqn="Repository.save",
                                 shown="'Repository.save' read as shop.base.Reposit")
    answer = _answers(script["analyzer"].received, "find_callers")[0]
    assert "'Repository.save' read as shop.base.Repository::save, the one definition of that name" in answer


async def test_generated_and_minified_files_cost_the_analysis_nothing(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, hostile_origin: str
) -> None:
    """The same analysis on the shop with `HOSTILE`'s files: the callers are the same, a search for a
    bundle's function finds none of it and names the files the index left out."""
    script = await _analyze_save(settings, redis_url, fake_forge, hostile_origin,
                                 [call("semantic_search", query="q5999 return a plus")])
    message = next(m for messages in script["analyzer"].received for m in messages
                   if isinstance(m, ToolMessage) and m.name == "semantic_search")
    answer = str(message.content)
    assert "static/vendor.min.js:" not in answer  # no hit from the bundle
    assert "not indexed, not hand-written source" in answer
    assert "shop/deep.py, shop/secrets.py, static/vendor.min.js" in answer


# the callers of the shop's `Repository.save`: `from shop import Cart` in app.py reaches it through
# shop/__init__.py's re-export
SHOP_SAVERS = {("app.py", 7, "app.checkout"), ("shop/cart.py", 13, "shop.cart.Cart::save"),
               ("tests/test_cart.py", 6, "tests.test_cart.test_total")}
# a Python project below the checkout's root, as a repository with a front end beside it holds one:
# its modules import each other as `orders.…` (services/api is its directory), the graph names them
# `services.api.orders.…` by their paths
API_PROJECT = {
    "services/api/pyproject.toml": '[project]\nname = "api"\n',
    "services/api/orders/__init__.py": "",
    "services/api/orders/store.py": "class Orders:\n    def save(self, order):\n        return order\n",
    "services/api/orders/checkout.py": "import orders.store\nfrom orders.store import Orders\n\n\n"
                                       "def place(order):\n    Orders().save(order)\n"
                                       "    return orders.store.Orders().save(order)\n",
}


@pytest.mark.parametrize("marker", ["pyproject.toml", "requirements.txt"])
async def test_an_analysis_finds_callers_in_a_python_project_below_the_root(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path, marker: str
) -> None:
    """`from orders.store import Orders` in services/api, whose pyproject.toml (or, for an application
    with no packaging, its requirements.txt) makes it the project's directory: before, the import named
    no module of the graph and the analysis found no caller."""
    project = {(f"services/api/{marker}" if name.endswith("pyproject.toml") else name): text
               for name, text in API_PROJECT.items()}
    origin = _served_shop(tmp_path, settings, fake_forge, project)
    script = await _analyze_save(
        settings, redis_url, fake_forge, next(origin), fqn="services.api.orders.store.Orders.save",
        expected={("services/api/orders/checkout.py", 6, "services.api.orders.checkout.place"),
                  ("services/api/orders/checkout.py", 7, "services.api.orders.checkout.place")},
        more=[call("find_callers", fqn="orders.store.Orders.save")])  # asked by the name its imports use
    assert _callers(script["analyzer"].received, "find_callers", nth=1) == {
        ("services/api/orders/checkout.py", 6, "services.api.orders.checkout.place"),
        ("services/api/orders/checkout.py", 7, "services.api.orders.checkout.place")}


# a function the shop only hands over: a FastAPI-style dependency and an event handler
HANDED = {
    "shop/deps.py": "def get_cart(request):\n    return request\n",
    "shop/api.py": "from shop.deps import get_cart\n\n\ndef Depends(f):\n    return f\n\n\n"
                   "def read_cart(cart=Depends(get_cart)):\n    return cart\n",
}


async def test_an_analysis_finds_where_a_python_function_is_handed_over(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    """`Depends(get_cart)` names get_cart for the framework to call: before, its callers were empty."""
    origin = _served_shop(tmp_path, settings, fake_forge, HANDED)
    await _analyze_save(settings, redis_url, fake_forge, next(origin), fqn="shop.deps.get_cart",
                        expected={("shop/api.py", 8, "shop.api.read_cart")})


# the shop's tests get their cart from a fixture in conftest.py: no line calls it, pytest does for each
# test naming it as a parameter
FIXTURES = {
    "tests/conftest.py": "import pytest\n\nfrom shop.cart import Cart\n\n\n@pytest.fixture\ndef cart():\n"
                         "    return Cart()\n",
    "tests/test_checkout.py": "def test_pay(cart):\n    assert cart.total() == 0\n",
}


async def test_an_analysis_finds_the_tests_that_request_a_pytest_fixture(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    """A fixture's callers are the tests that request it by name. Before, the graph said nothing names it."""
    origin = _served_shop(tmp_path, settings, fake_forge, FIXTURES)
    await _analyze_save(settings, redis_url, fake_forge, next(origin), fqn="tests.conftest.cart",
                        expected={("tests/test_checkout.py", 1, "tests.test_checkout.test_pay")})


# a PHP application beside the shop: its controller's action and its plugin's hook are named only as
# callables (a route's [Class::class, 'method'], add_action's array($this, ...) and function name)
PHP_APP = {
    "app/Http/UserController.php": "<?php\nnamespace App\\Http;\n\nclass UserController\n{\n"
                                   "    public function show(int $id): string { return ''; }\n"
                                   "    public function boot(): void {\n"
                                   "        add_action('init', array($this, 'show')); }\n}\n",
    "routes/web.php": "<?php\nuse App\\Http\\UserController;\n\n"
                      "Route::get('/users/{id}', [UserController::class, 'show']);\n"
                      "add_action('wp_loaded', 'boot_users');\nfunction boot_users() {}\n",
}


async def test_an_analysis_finds_the_route_and_hook_that_name_a_php_controller_action(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    """A controller action has no call expression anywhere: the route that maps a URL to it and the hook
    that registers it name it as callables. Before, the graph told the analysis nothing calls it."""
    origin = _served_shop(tmp_path, settings, fake_forge, PHP_APP)
    script = await _analyze_save(
        settings, redis_url, fake_forge, next(origin), fqn="App\\Http\\UserController::show",
        expected={("routes/web.php", 4, ""), ("app/Http/UserController.php", 8, "App\\Http\\UserController::boot")},
        more=[call("find_callers", fqn="boot_users"), call("find_callers", fqn="App\\Http\\UserController::boot")])
    assert _callers(script["analyzer"].received, "find_callers", nth=1) == {("routes/web.php", 5, "")}
    # a method no line names: the answer says so is not "unused" (before: an empty list and nothing else)
    unnamed = _answers(script["analyzer"].received, "find_callers")[2]
    assert '"sites":[]' in unnamed and "search the code for 'boot' before treating it as unused" in unnamed


# an Angular front end beside the shop: its component's handlers are called by its template alone, a file
# its decorator names; another component names a template that is a link out of the checkout
ANGULAR_APP = {
    "web/cart.component.ts": 'import { Component } from "@angular/core";\n\n'
                             '@Component({ selector: "app-cart", templateUrl: "./cart.html" })\n'
                             "export class CartComponent {\n  checkout() {}\n  get total() { return 1; }\n}\n",
    "web/cart.html": '<p>{{ total }}</p>\n<button (click)="checkout()">Pay</button>\n',
    "web/leak.component.ts": 'import { Component } from "@angular/core";\n\n'
                             '@Component({ templateUrl: "./leak.html" })\nexport class LeakComponent {\n'
                             "  localhost() {}\n}\n",
}


async def test_an_analysis_finds_the_template_that_calls_an_angular_components_handler(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    """No line of TypeScript calls a button's handler: its component's template does. Before, the graph
    told the analysis nothing names it. A template that is a link out of the checkout is not read."""
    outside = tmp_path / "outside.html"  # on the worker's disk, not in the repository
    outside.write_text('<button (click)="localhost()">x</button>\n')
    origin = _served_shop(tmp_path, settings, fake_forge, ANGULAR_APP, {"web/leak.html": str(outside)})
    script = await _analyze_save(
        settings, redis_url, fake_forge, next(origin), fqn="web/cart.component:CartComponent::checkout",
        expected={("web/cart.html", 2, "web/cart.component:CartComponent")}, shown='"sites":[{"pa',
        more=[call("find_callers", fqn="web/leak.component:LeakComponent::localhost")])
    leak = _answers(script["analyzer"].received, "find_callers")[1]
    assert '"sites":[]' in leak


async def _analyze_save(settings: Settings, redis_url: str, fake_forge: FakeForgeState, origin: str,
                        more: list[AIMessage] | None = None, fqn: str = "shop.base.Repository.save",
                        expected: set[tuple[str, int, str]] = SHOP_SAVERS, shown: str = '"sites":[{"path":'
                        ) -> dict[str, ScriptedModel]:
    """An analysis of "who saves carts?" asking the graph for `fqn`'s callers (then `more`); the trace
    shows the start of the answer, which holds `shown`."""
    settings.redis_url = redis_url
    allow_http_git(settings)
    settings.triggers.analyze_label = "bug"  # the sample adds "bug"
    fake_forge.grant("github", REPO, "Codertocat", "write")  # the sample's actor
    fake_forge.grant("github", REPO, "alice", "write")  # the issue's author: a member, so her text is read
    fake_forge.add_issue("github", REPO, 1, FakeIssue(title="Saving a cart twice", body="Who saves carts?"))
    analysis = Analysis(summary="Repository.save is called by the cart, the checkout and a test",
                        affected_files=["shop/base.py"],
                        evidence=[Evidence(path="shop/base.py", start_line=7, end_line=10, note="save()")])
    script = {
        "decomposer": scripted([answer(Decomposition, Decomposition(
            criteria=[AcceptanceCriterion(id=1, text="every caller of save is named")]))]),
        "analyzer": scripted([call("find_callers", fqn=fqn), *(more or []),
                              call("finish_exploration", files=["shop/base.py"], reason="callers known"),
                              answer(Analysis, analysis)]),
    }
    await _deliver(settings, origin, 1, "5e1c0a4b-cc78-11e3-81ab-4c9367dc0958")
    assert (await work(settings, lambda role: script[role])).jobs_failed == 0
    (task,) = await _task_ids(settings)
    asked = _tool_lines(_trace(settings, task), "analyzer", "find_callers")[0]
    assert '"state":"ok"' in asked and shown in asked  # the trace shows the answer's start
    assert _callers(script["analyzer"].received, "find_callers") == expected
    return script


def _script_change(root: Path) -> ChangeRepo:
    _copy(root, ("src", "legacy", "packages", "tsconfig.json"),
          "profile: typescript\ncommands:\n  install: false\n  test: false\n  lint: false\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "feature")
    repo = ChangeRepo(root=root, base=base, head=base)
    pricing = (root / "src" / "pricing.ts").read_text().replace(
        "return prices.reduce((a, b) => a + b, 0);", "return prices.reduce((a, b) => a + b, 0) * 2;")
    repo.commit({"src/pricing.ts": pricing}, "Double every sum")
    return repo


@pytest.mark.parametrize("history", ["short", "long"])
async def test_a_review_of_a_typescript_change_finds_callers_through_the_graph(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path, history: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reviewer's callers come from the graph; with a history too long to read first (here: any), the
    review starts on the graph alone while the rest of the base is built behind it, and answers the same."""
    if history == "long":
        monkeypatch.setattr("project.index.basecomplete.DEFER_FROM_COMMITS", 1)
    repo = _script_change(tmp_path / "repo")
    prepare(settings, redis_url, fake_forge, repo.root)
    fake_forge.add_change("github", REPO, 1, fake_change(repo))
    review = Review(verdict="request_changes", summary="sumPrices doubles every total its callers compute",
                    verified_criteria=[1], unverified_criteria=[], findings=[Finding(
                        severity="major", message="Cart.total and legacyTotal now double every sum",
                        path="src/pricing.ts", line=7, criteria=[2])])
    models = Models([call("find_callers", fqn="src/pricing:sumPrices"),
                     call("find_callers", fqn="src/pricing.sumPrices"), done(), answer(Review, review)])
    await deliver(settings, "github", 301, f"file://{repo.root}")
    await review_work(settings, redis_url, models)
    (task,) = await _task_ids(settings)
    asked, misnamed = _tool_lines(_trace(settings, task), "reviewer", "find_callers")
    # a name in the wrong form: no callers, and the answer says why and names the right form
    assert "no definition is named" in misnamed  # in the trace too
    assert "no definition is named 'src/pricing.sumPrices' (definitions with that name: src/pricing:sumPrices)" \
        in _answers(models.reviewer.received, "find_callers")[1]
    # `const { sumPrices } = require(...)` in a CommonJS file, resolved to the TypeScript module
    assert '"state":"ok"' in asked and '"sites":[{"path":"legacy/util.js"' in asked
    assert _callers(models.reviewer.received, "find_callers") == {
        ("legacy/util.js", 4, "legacy/util:legacyTotal"),
        ("legacy/util.js", 11, "legacy/util:Ledger::close"),  # `Ledger.prototype.close = function…`
        ("src/components/Total.vue", 8, "src/components/Total.vue"),  # a Vue component's `<script setup>`
        ("src/components/Total.vue", 2, "src/components/Total.vue"),  # and its template
        ("src/models/cart.ts", 19, "src/models/cart:Cart::total"),  # `import * as pricing`
        # `import { sumPrices } from "@shop/pricing"` in a workspace package: tsconfig.json maps `@shop/*`
        ("packages/checkout/src/order.ts", 4, "packages/checkout/src/order:orderTotal")}
    deferred = list(settings.data_dir.rglob("*.graph.db"))
    assert bool(deferred) == (history == "long")  # the review's base began as its code graph alone
