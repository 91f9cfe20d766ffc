"""A self-managed GitLab, its git and the model behind a company's own CA, as `forgebot serve` meets them.

Each client reads its own variable (requests REQUESTS_CA_BUNDLE, httpx SSL_CERT_FILE, git GIT_SSL_CAINFO):
an operator who set the one their other tools read got a bot that half trusted the CA. With SSL_CERT_FILE
alone, every forge API call failed and `/readyz` said `cannot connect (SSLError)`; tasks waited in the queue
for good. Now SSL_CERT_FILE alone is enough (`foundation.cabundle`), and where a certificate is still not
trusted, what fails says so and which variable to set, at once: a task is not retried for minutes as if
the server were down.

The machine's own CA variables (this one sets all of them to the system bundle) are blanked: the test sets
exactly what the operator would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from foundation.cabundle import HINT
from foundation.settings import Settings
from tests.conftest import GITLAB_SECRET, GITLAB_TOKEN
from tests.fakes.forge_http import FakeForgeState, FakeIssue, create_fake_forge
from tests.fakes.git_http import create_git_server
from tests.fakes.model_server import ModelServer, structured
from tests.fakes.private_ca import private_ca
from tests.fakes.server import ServerThread, serving
from tests.firstday.conftest import ISSUE, MODEL_KEY, Launch
from tests.firstday.service import wait_until
from tests.graph.conftest import FIXTURES, init_repo
from tests.intake.payloads import serve_samples

pytestmark = pytest.mark.timeout(300)
BLOCKED = {"criteria": [], "assumptions": [], "questions": ["Which calculator?"]}
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "SSL_CERT_DIR",
                "GIT_SSL_CAPATH")


class Company:
    """The forge API, its git and the model, each served over HTTPS with a certificate of one private CA."""

    def __init__(self, ca: Path, forge: ServerThread, git_url: str, model: ModelServer, state: FakeForgeState):
        self.ca, self.forge, self.git_url, self.model, self.state = ca, forge, git_url, model, state

    def env(self, **ca: str) -> dict[str, str]:
        return {
            **dict.fromkeys(CA_VARIABLES, ""), **ca,
            "FORGEBOT_GITLAB__URL": f"{self.forge.url}/gitlab",
            "FORGEBOT_GITLAB__TOKEN": GITLAB_TOKEN,
            "FORGEBOT_GITLAB__WEBHOOK_SECRET": GITLAB_SECRET,
            "FORGEBOT_GITLAB__TIMEOUT": "5",
            "FORGEBOT_TRIGGERS__ANALYZE_LABEL": "Platform",
            "FORGEBOT_WORKSPACE__ALLOWED_PROTOCOLS": '["https"]',
            "FORGEBOT_WORKSPACE__GIT_HOSTS": json.dumps([self.git_url.rsplit("/", 1)[0]]),
            "FORGEBOT_LLM__BASE_URL": self.model.openai_url, "FORGEBOT_LLM__MODEL": self.model.model,
            "FORGEBOT_LLM__API_KEY": MODEL_KEY, "FORGEBOT_LLM__TIMEOUT": "10",
            "FORGEBOT_QUESTIONS__MAX_ROUNDS": "0",
        }


@pytest.fixture
def company(tmp_path: Path, settings: Settings) -> Iterator[Company]:
    ca, tls = private_ca(tmp_path)
    work = init_repo(shutil.copytree(FIXTURES / "php_project", tmp_path / "work"))
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(served / "app.git")], check=True)
    subprocess.run(["git", "-C", str(served / "app.git"), "branch", "master", "main"], check=True)
    state = FakeForgeState()
    state.grant("gitlab", "1", "1", 30)  # the label sample's actor
    state.grant("gitlab", "1", "7", 30)  # the issue's author: its text reaches the model
    state.add_issue("gitlab", "1", ISSUE, FakeIssue(title="Subtraction", body="The calculator cannot subtract."))
    app = create_fake_forge()
    app.state.forge = state
    with serving(app, tls) as forge, serving(create_git_server(served, None), tls) as git_server, \
            ModelServer(tls=tls) as model:
        git_url = f"{git_server.url}/app.git"
        serve_samples(state, settings, clone_url=git_url, git_dir=str(served / "app.git"))
        model.responder = lambda request: structured("Decomposition", BLOCKED)
        yield Company(ca, forge, git_url, model, state)


def test_ssl_cert_file_alone_makes_the_forge_its_git_and_the_model_trusted(launch: Launch, company: Company) -> None:
    service = launch("serve", **company.env(SSL_CERT_FILE=str(company.ca))).wait_healthy()
    assert service.label(company.git_url) == 202
    service.wait_states(lambda states: states == ["done"], "the analysis")
    assert service.task_states() == [("done", "blocked")]
    assert company.model.requests  # the model was reached over TLS
    assert [c for c in company.state.comments_on("gitlab", "1", ISSUE) if "Analysis blocked" in c.body]
    bundle = service.data_dir / "tls" / "ca-bundle.pem"
    assert company.ca.read_text().strip() in bundle.read_text()  # the operator's CA, with the public ones
    assert "Traceback" not in service.logs()


def test_a_certificate_no_variable_covers_is_named_and_the_task_fails_at_once(launch: Launch, company: Company) -> None:
    """The forge trusted (REQUESTS_CA_BUNDLE), git told to trust the system's CAs only (GIT_SSL_CAINFO, as
    this machine sets it): the clone is refused, and the task fails on its first try naming the variable git
    reads, which the operator's own setting keeps from the shared bundle."""
    env = company.env(REQUESTS_CA_BUNDLE=str(company.ca), GIT_SSL_CAINFO="/etc/ssl/certs/ca-certificates.crt",
                      FORGEBOT_DURABILITY__RETRY_SECONDS="30")
    service = launch("serve", **env).wait_healthy()
    assert service.label(company.git_url) == 202
    service.wait_states(lambda states: states == ["failed"], "the task to fail", timeout=60)
    (failure,) = service.failures()
    assert failure.kind == "git certificate" and not failure.transient, failure
    assert failure.operator_action == (
        "git refused the server's certificate: it reads GIT_SSL_CAINFO=/etc/ssl/certs/ca-certificates.crt, not "
        "SSL_CERT_FILE: unset GIT_SSL_CAINFO (forgebot then gives SSL_CERT_FILE's certificates to every client) or "
        "add the CA there"), failure
    assert not service.log_lines("task deferred")  # not waited out as an outage
    comments = [c.body for c in company.state.comments_on("gitlab", "1", ISSUE)]
    assert any("does not trust the TLS certificate" in body for body in comments), comments


def test_a_forge_whose_ca_is_not_named_is_said_by_readyz_with_the_variable_to_set(
    launch: Launch, company: Company
) -> None:
    service = launch("serve", **company.env()).wait_healthy()
    gaps = wait_until(lambda: [m for m in service.get_json("/readyz")[1]["missing"] if "certificate" in m], 60,
                      "readyz to name the certificate")
    assert gaps == [f"gitlab: the forge has not said who the bot is (gitlab: TLS certificate verify failed: unable to "
                    f"get local issuer certificate; {HINT}); it is asked again in the background, and tasks wait in "
                    "the queue until it answers"]
    assert "Traceback" not in service.logs()
