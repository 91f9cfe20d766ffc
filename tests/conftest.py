"""Shared fixtures: clean environment, a real private Redis, the fake forge over HTTP, settings.

Safe under `pytest -n N` (pytest-xdist, as `scripts/test` runs the suite): session fixtures are
per worker process (each worker its own Redis on its own Unix socket, its own fake forge on a port-0
socket), Postgres names are random per test, files live in tmp_path.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
from pydantic import SecretStr

from bot.cli.redisserver import PrivateRedis
from foundation.settings import (
    EmbedderSettings,
    GitHubSettings,
    GitLabSettings,
    IntakeSettings,
    SandboxSettings,
    Settings,
)
from tests.fakes.forge_http import FakeForgeState, create_fake_forge
from tests.fakes.server import ServerThread
from tests.tools import need, need_tools, port_open

pytest_plugins = ["tests.fakes.contract.plugin"]

GITLAB_SECRET = "gitlab-hook-secret"
GITHUB_SECRET = "It's a Secret to Everybody"
GITLAB_TOKEN = "glpat-test-token-do-not-log"
GITHUB_TOKEN = "ghp_test_token_do_not_log"
# another server for a run: TEST_MARIADB_URL (tests/deploy/test_required_tools.py points it at a closed port)
MARIADB_URL = os.environ.get("TEST_MARIADB_URL", "mysql://root@127.0.0.1:3306/test")


# A test using one of these fixtures needs PHP: it gets the `php` marker (`-m "not php"` leaves it out).
PHP_FIXTURES = frozenset({"php", "php_tools", "php_vendor"})
# Multi-process scenarios that mostly wait (workers, services): started first, so that under xdist
# their waits overlap the many short tests instead of trailing after them. The durability scenarios
# stay together in one worker: dealt out like the service scenarios, their clusters ran side by side
# and the suite took more CPU and wall (measured: 206 CPU-s and 117 s against 190 CPU-s and 109 s).
TOGETHER_FIRST = "durability"
DEALT_FIRST = "e2e"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if PHP_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.php)
    here = Path(__file__).parent
    together: list[pytest.Item] = []
    dealt: list[pytest.Item] = []
    short: list[pytest.Item] = []
    for item in items:
        if item.path.is_relative_to(here / TOGETHER_FIRST):
            together.append(item)
        else:
            (dealt if item.path.is_relative_to(here / DEALT_FIRST) else short).append(item)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    items[:] = spread_first(together, dealt, short, workers)


def spread_first(
    together: list[pytest.Item], dealt: list[pytest.Item], short: list[pytest.Item], workers: int
) -> list[pytest.Item]:
    """`together` at the start of worker 0's first batch, `dealt` round-robin to the others' starts.

    pytest-xdist's `load` scheduler hands each worker a first batch of *consecutive* items (a
    quarter of its share), then feeds whoever is idle. Long scenarios merely put first would all
    land in worker 0's batch and run one after another there (measured: that worker 257 s, the
    others 118 s). Every worker computes the same order (xdist requires identical collections).
    """
    if workers <= 1:
        return together + dealt + short
    # the first batch per worker, as xdist.scheduler.load computes it
    batch = max((len(together) + len(dealt) + len(short)) // workers // 4, 2)
    shares = [together] + [dealt[index :: workers - 1] for index in range(workers - 1)]
    order: list[pytest.Item] = []
    rest = iter(short)
    for share in shares:
        order.extend(share[:batch])
        order.extend(item for _, item in zip(range(batch - len(share[:batch])), rest, strict=False))
    order.extend(item for share in shares for item in share[batch:])
    order.extend(rest)
    return order


@pytest.fixture(autouse=True)
def marked_needs(request: pytest.FixtureRequest) -> None:
    """A `php` test skips without PHP on a laptop, and fails under FORGEBOT_REQUIRE_TOOLS=1."""
    if request.node.get_closest_marker("php") is not None:
        need_tools("php")


@pytest.fixture
def php() -> str:
    """The `php` binary; a test using this fixture (directly or through another) is marked `php`."""
    need_tools("php")
    return shutil.which("php") or "php"


@pytest.fixture
def worker_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The product's temporary directory made one of the test's own, to see what it leaves there (a signing
    key's file). git's empty home, made once per process, is made first where it stays: made here, a later
    test's git commands would name a home that went with this test's directory."""
    from foundation.gitrunner import environment

    environment()
    private = tmp_path / "worker-tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    return private


@pytest.fixture(autouse=True)
def honest_model_scripts() -> Iterator[None]:
    """A scripted model reply that breaks the schema its request sent fails the test (the server
    answered it with a 500, which the product may have handled as a provider's failure)."""
    yield
    server = sys.modules.get("tests.fakes.model_server")  # not imported: no scripted model ran
    if server is not None and server.SCRIPT_ERRORS:
        errors = list(server.SCRIPT_ERRORS)
        server.SCRIPT_ERRORS.clear()
        pytest.fail("the model script broke the schemas the product sent:\n" + "\n".join(errors), pytrace=False)


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No FORGEBOT_* variable from the developer's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith("FORGEBOT_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def mariadb_url() -> str:
    """The test MariaDB/MySQL server (root without password, database `test`)."""
    where = urlsplit(MARIADB_URL)
    host, port = where.hostname or "127.0.0.1", where.port or 3306
    need(port_open(port, host), f"MariaDB at {host}:{port} (started by .ci/run)")
    return MARIADB_URL


@pytest.fixture(scope="session")
def redis_server() -> Iterator[PrivateRedis]:
    """One real redis-server for the session, started the way `forgebot serve` starts it."""
    directory = Path(tempfile.mkdtemp(prefix="fb-redis-"))  # short: Unix socket paths are limited
    server = PrivateRedis(directory)
    server.start()
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def redis_url(redis_server: PrivateRedis) -> str:
    redis.Redis(unix_socket_path=str(redis_server.socket)).flushall()
    return redis_server.url


def _load_forge_contracts() -> None:
    """The contract layer reads and compiles the forges' descriptions once per process (~1.5 CPU-s,
    3 s on a loaded machine): done here, it is not paid inside the first request a test times (the
    receiver gives a repository's `.forgebot.yml` 3 s)."""
    from tests.fakes.contract import documents, github_rest, gitlab_rest

    if documents.available():
        gitlab_rest.matcher()
        next(op for op in github_rest.operations() if op.id == "repos/get").response_check(200)
        github_rest.matcher()


@pytest.fixture(scope="session")
def forge_server() -> Iterator[ServerThread]:
    _load_forge_contracts()
    server = ServerThread(create_fake_forge())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fake_forge(forge_server: ServerThread) -> FakeForgeState:
    """A fresh fake forge state per test, served over HTTP at `forge_server.url`."""
    state = FakeForgeState()
    forge_server.server.config.app.state.forge = state
    return state


@pytest.fixture
def settings(tmp_path: Path, forge_server: ServerThread) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        _secrets_dir=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "data",
        gitlab=GitLabSettings(
            url=f"{forge_server.url}/gitlab",
            token=SecretStr(GITLAB_TOKEN),
            webhook_secret=SecretStr(GITLAB_SECRET),
            timeout=5,
        ),
        github=GitHubSettings(
            api_url=f"{forge_server.url}/github",
            token=SecretStr(GITHUB_TOKEN),
            webhook_secret=SecretStr(GITHUB_SECRET),
            timeout=5,
            min_write_interval=0,
            max_retries=0,
        ),
        # the shared forge samples date from 2015-2019: the replay guard (on by default) is turned
        # off here and proved on its own in tests/security/test_secrets.py
        intake=IntakeSettings(max_event_age_hours=0),
        # lexical and graph legs only: the offline model costs each task ~0.4 CPU-s and a wait for its
        # vectors; the tests of the vector leg name their embedder (tests/e2e/test_search_vectors.py,
        # tests/graph/index/test_basevectors.py, tests/evaluation/test_vector_builds.py)
        embedder=EmbedderSettings(kind="off"),
        # the suite runs as root on the CI machine and here: its checks accept that; the refusal
        # and the non-root worker are proved in tests/security/test_sandbox_escape.py
        sandbox=SandboxSettings(allow_root=True),
    )
