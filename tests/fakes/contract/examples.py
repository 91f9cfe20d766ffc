"""GitHub's own example answers, which the fake GitHub starts every representation from.

The examples are copied verbatim out of GitHub's REST description (`components/examples`, MIT, see
tests/fixtures/forge-contract/LICENSE.octokit-openapi) into tests/fixtures/forge-contract/github-examples.json,
so the fake forge works on a checkout without `shared/forge-contract`. `python -m
tests.fakes.contract.examples` rewrites the copy from the description; a test fails while the copy
differs from it.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from tests.fakes.contract import documents

FILE = documents.ROOT / "tests" / "fixtures" / "forge-contract" / "github-examples.json"
NAMES = (
    "issue-items", "issue-comment", "pull-request-review-comment-2", "pull-request-review-comment",
    "reaction", "repository-collaborator-permission-response-if-user-has-admin-permissions", "commit",
    "full-repository-default-response", "content-file-response-if-content-is-a-file",
    "private-user-response-with-public-profile-information", "integration", "hook", "installation-token",
    "pull-request", "diff-entry-items", "pull-request-review",
)


def from_description() -> dict[str, Any]:
    """The named examples as the description holds them (needs the contract files)."""
    examples = documents.github_rest()["components"]["examples"]
    return {name: examples[name]["value"] for name in NAMES if name in examples}


@cache
def _stored() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(FILE.read_bytes())
    return found


def github_example(name: str) -> Any:
    """A fresh copy of GitHub's example `name`; callers fill it with the fake's state."""
    return copy.deepcopy(_stored()[name])


if __name__ == "__main__":
    FILE.write_text(json.dumps(from_description(), indent=1, sort_keys=True) + "\n")
