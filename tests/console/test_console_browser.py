"""The task console through a real browser over a running `forgebot web`, with tasks the real worker ran.

Two tasks go the whole way: a GitLab analysis that finishes (scripted model) and a GitHub implementation
whose model fails. Webhooks go to the `forgebot web` process over HTTP; the arq worker runs them on
the real Redis and posts through the real SDKs to the fake forge; the status comment carries the
task page's link, which the browser follows.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from bot.intake.identity import Identities
from bot.intake.webhooks import github_signature
from bot.worker.jobs import build_worker
from foundation.settings import Settings
from tests.conftest import GITHUB_SECRET, GITLAB_SECRET
from tests.console.browser import browser, need_browser, screenshot
from tests.e2e.conftest import allow_http_git, pointed_at
from tests.e2e.test_analyze_skeleton import _models
from tests.fakes.forge_http import FakeForgeState, FakeIssue
from tests.fakes.model_server import scripted
from tests.fakes.samples import sample_bytes
from tests.fakes.server import free_port
from tests.intake import deliveries

OPERATOR = "op-console-token-7f3a9c-1b2d3f4a5c6e7081"
LINK = re.compile(r"\[task page\]\((http://[^)\s]+)\)")


def _wait_ready(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    with httpx.Client(timeout=1) as http:  # one client: each `httpx.get` would load the CA bundle again
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError("forgebot web exited (its log is printed below)")
            try:
                if http.get(f"{url}/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
    raise RuntimeError("forgebot web did not become ready")


@pytest.fixture
def web(settings: Settings, redis_url: str) -> Iterator[str]:
    """`forgebot web` as its own process on the test's data dir and Redis, console on."""
    need_browser()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    settings.redis_url = redis_url
    settings.console.operator_token = SecretStr(OPERATOR)
    settings.console.public_url = url
    settings.triggers.analyze_label, settings.triggers.implement_label = "Platform", "bug"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEBOT_")}
    env.update({
        "FORGEBOT_DATA_DIR": str(settings.data_dir),
        "FORGEBOT_REDIS_URL": redis_url,
        "FORGEBOT_GITLAB__URL": settings.gitlab.url,
        "FORGEBOT_GITLAB__WEBHOOK_SECRET": GITLAB_SECRET,
        "FORGEBOT_GITHUB__WEBHOOK_SECRET": GITHUB_SECRET,
        "FORGEBOT_CONSOLE__OPERATOR_TOKEN": OPERATOR,
        "FORGEBOT_CONSOLE__PUBLIC_URL": url,
        "FORGEBOT_TRIGGERS__ANALYZE_LABEL": "Platform",  # the GitLab sample adds "Platform"
        "FORGEBOT_TRIGGERS__IMPLEMENT_LABEL": "bug",  # the GitHub sample adds "bug"
        "FORGEBOT_GITLAB__TOKEN": settings.gitlab.token.get_secret_value() if settings.gitlab.token else "",
        "FORGEBOT_INTAKE__MAX_EVENT_AGE_HOURS": "0",  # the shared samples are years old
    })
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    log = (settings.data_dir / "web.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "bot", "web", "--port", str(port)], env=env,
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_ready(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()
        sys.stderr.write((settings.data_dir / "web.log").read_text(errors="replace")[-4000:])


def _failing_models() -> Callable[[str], BaseChatModel]:
    broken = scripted([])  # every call finds an empty script: the model's endpoint answers 500, an outage
    return lambda role: broken


async def _work(settings: Settings, models: Callable[[str], BaseChatModel]) -> None:
    assert settings.redis_url
    worker = build_worker(settings, settings.redis_url, model_factory=models, burst=True, handle_signals=False,
                          identities=Identities(settings))  # as `forgebot worker`: the bot's identity first
    try:
        await worker.main()
    finally:
        await worker.close()


def _deliver_gitlab(url: str, origin_url: str) -> None:
    body = pointed_at(sample_bytes("gitlab/issue.labels-changed.json"), origin_url)
    headers = {"content-type": "application/json", "x-gitlab-event": "Issue Hook",
               "x-gitlab-token": deliveries.secret("gitlab", 1),
               "idempotency-key": "c0a5e1e0-00df-429c-9bc9-a9475de2efe4"}
    assert httpx.post(url + deliveries.path("gitlab", body), content=body, headers=headers).status_code == 202


def _deliver_github(url: str, origin_url: str) -> None:
    body = pointed_at(sample_bytes("github/issues.labeled.json"), origin_url)
    headers = {"content-type": "application/json", "x-github-event": "issues",
               "x-github-delivery": "c0a5e1e0-cc78-11e3-81ab-4c9367dc0958",
               "x-hub-signature-256": github_signature(deliveries.secret("github", 186853002).encode(), body)}
    assert httpx.post(url + deliveries.path("github", body), content=body, headers=headers).status_code == 202


async def _two_tasks(settings: Settings, fake_forge: FakeForgeState, origin_url: str, web: str) -> str:
    """Run a finished GitLab analysis and a failed GitHub implementation; the GitLab status comment's link."""
    allow_http_git(settings)
    fake_forge.members[("gitlab", "1", "7")] = "30"
    fake_forge.grant("gitlab", "1", "1", 30)
    fake_forge.add_issue("gitlab", "1", 23, FakeIssue(title="New API: create/update/delete file", body="..."))
    _deliver_gitlab(web, origin_url)
    await _work(settings, _models())
    fake_forge.members[("github", "Codertocat/Hello-World", "alice")] = "write"
    fake_forge.grant("github", "Codertocat/Hello-World", "Codertocat", "write")
    fake_forge.add_issue("github", "Codertocat/Hello-World", 1, FakeIssue(title="Spelling error", body="..."))
    _deliver_github(web, origin_url)
    await _work(settings, _failing_models())
    (status,) = [c for c in fake_forge.comments_on("gitlab", "1", 23, status=True) if "purpose=status" in c.body]
    found = LINK.search(status.body)
    assert found, status.body
    return found.group(1)


def _text(driver: Any, css: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def _rows(driver: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [row.text for row in driver.find_elements(By.CSS_SELECTOR, "#tasks tbody tr")]


def _submit(driver: Any, button: str) -> None:
    """Click a form's button and wait until the next page replaced this one (no fixed sleep)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    pages: list[Any] = []

    def clicked(d: Any) -> bool:
        try:  # a node of a page still being replaced is retried, not a failure
            page = d.find_element(By.TAG_NAME, "main")
            d.find_element(By.ID, button).click()
        except (StaleElementReferenceException, WebDriverException):
            return False
        pages.append(page)
        return True

    def replaced(d: Any) -> bool:
        """The old page's node is gone: stale to Selenium, or, as Chromium also says it, detached."""
        try:
            pages[0].is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    WebDriverWait(driver, 20).until(clicked)
    WebDriverWait(driver, 20).until(replaced)
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")


def _log_in(driver: Any, web: str, token: str) -> None:
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(f"{web}/console/login")

    def typed(d: Any) -> bool:
        """Type into the field of the page as it is now: a node of a page still being replaced is retried."""
        try:
            field = d.find_element(By.ID, "token")
            field.clear()
            field.send_keys(token)
            return bool(field.get_attribute("value") == token)
        except (StaleElementReferenceException, WebDriverException):
            return False

    WebDriverWait(driver, 20).until(typed)
    _submit(driver, "login")


def _choose(driver: Any, select_id: str, visible: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, select_id)).select_by_visible_text(visible)
    _submit(driver, "apply")


@pytest.mark.timeout(300)  # a web process, two task runs and a browser: past 60 s on a loaded machine (xdist)
async def test_console_in_a_real_browser(
    settings: Settings, fake_forge: FakeForgeState, origin_url: str, web: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    link = await _two_tasks(settings, fake_forge, origin_url, web)
    assert link.startswith(f"{web}/console/tasks/")
    with browser() as driver:
        # the link from the status comment opens the task page without any login
        driver.get(link)
        assert _text(driver, "#task-state") == "done"
        bars = driver.find_elements(By.CSS_SELECTOR, "#timeline g.bar")
        # the steps before the graph, then its nodes
        assert [b.get_attribute("data-node") for b in bars] == ["mirror", "worktree", "memory", "index", "decomposer",
                                                                 "analyzer", "publisher"]
        assert {b.get_attribute("class") for b in bars} == {"bar ok"}
        assert "420" in _text(driver, "#tokens")  # the scripted model's 120 + 300 tokens
        roles = _text(driver, "#roles")
        assert "decomposer" in roles and "analyzer" in roles  # every role's ledger, summed by the usage reducer
        groups = [d.get_attribute("data-node") for d in driver.find_elements(By.CSS_SELECTOR, "#trace details.node")]
        assert "analyzer" in groups, groups  # the analyzer's model calls, grouped under its bar
        analyzer = driver.find_element(By.CSS_SELECTOR, '#trace details[data-node="analyzer"]')
        assert "model" in str(analyzer.get_attribute("textContent"))  # collapsed: later nodes trace too
        assert OPERATOR not in driver.page_source and GITLAB_SECRET not in driver.page_source
        assert not driver.find_elements(By.CSS_SELECTOR, "nav")  # a link holder sees this task only
        screenshot(driver, "task-page", tmp_path)

        # a forged signature, a link for another task, and an expired link are refused
        task_id = link.split("/console/tasks/")[1].split("?")[0]
        driver.get(re.sub(r"sig=[0-9a-f]+", "sig=" + "0" * 64, link))
        assert "not valid" in _text(driver, "#denied")
        driver.get(link.replace(task_id, "0123456789abcdef"))
        assert "not valid" in _text(driver, "#denied")
        expired = re.sub(r"expires=\d+", f"expires={int(time.time()) - 60}", link)
        driver.get(expired)
        assert "expired" in _text(driver, "#denied")

        # the operator pages are refused without the token, and a wrong token does not open them
        for page in ("/console/tasks", "/console/health"):
            driver.get(f"{web}{page}")
            assert driver.current_url.endswith("/console/login")
        _log_in(driver, web, "not-the-token")
        assert "not the operator token" in _text(driver, "#error")

        _log_in(driver, web, OPERATOR)
        assert driver.current_url.endswith("/console/tasks")
        assert len(_rows(driver)) == 2
        screenshot(driver, "task-list", tmp_path)
        _choose(driver, "state", "failed")
        (failed,) = _rows(driver)
        assert "failed" in failed and "Codertocat/Hello-World" in failed
        _choose(driver, "state", "any")
        _choose(driver, "repo", "gitlabhq/gitlab-test")
        (done,) = _rows(driver)
        assert "done" in done and task_id in done
        _choose(driver, "repo", "any")
        _choose(driver, "mode", "implement")
        (implementing,) = _rows(driver)
        assert "Codertocat/Hello-World" in implementing
        _choose(driver, "mode", "review")
        assert _text(driver, "#empty") == "No task matches."

        driver.get(f"{web}/console/health")
        assert _text(driver, "#depth") == "0"
        assert "Codertocat/Hello-World" in _text(driver, "#failures")
        kinds = _text(driver, "#failure-kinds")
        # grouped, with what to do
        assert "model unavailable" in kinds and "check that it is up (`forgebot check`)" in kinds
        screenshot(driver, "health", tmp_path)
