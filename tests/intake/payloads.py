"""Variants of the verbatim forge samples that the samples do not cover, derived in code.

GitHub publishes no `issue_comment` example on a pull request: `github_pr_comment` adds the
`issue.pull_request` object GitHub sends for comments on PRs to `issue_comment.created.json`.
GitLab's doc examples omit `discussion_id`; `gitlab_note` adds it as the hook builder sends it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from foundation.forge import RepoRef
from foundation.settings import Settings
from tests.fakes.forge_state import FakeForgeState, FakeProject
from tests.fakes.samples import sample

GITHUB_REPO = "Codertocat/Hello-World"
GITLAB_BOT_ID = 99
GITHUB_BOT = "forgebot[bot]"


# the repositories the samples name: (forge, id) → path; what the fake forge answers for them
SAMPLE_PROJECTS = {
    ("gitlab", 5): "gitlab-org/gitlab-test",
    ("gitlab", 1): "gitlabhq/gitlab-test",
    ("github", 186853002): GITHUB_REPO,
}


def forge_host(settings: Settings, forge: str) -> str:
    """scheme://host:port of the configured forge, where its clone URLs live."""
    parts = urlsplit(settings.gitlab.url if forge == "gitlab" else settings.github.api_url)
    return f"{parts.scheme}://{parts.netloc}"


def sample_repo(settings: Settings, forge: str = "gitlab", project_id: int = 5, clone_url: str = "",
                default_branch: str = "master") -> RepoRef:
    """A sample's repository as the configured forge's API describes it."""
    if forge == "github" and project_id == 5:
        project_id = 186853002
    path = SAMPLE_PROJECTS[(forge, project_id)]
    return RepoRef(
        forge=forge,  # type: ignore[arg-type]
        project=str(project_id) if forge == "gitlab" else path,
        path=path,
        default_branch=default_branch,
        clone_url=clone_url or f"{forge_host(settings, forge)}/{path}.git",
        id=project_id,
    )


def serve_samples(
    state: FakeForgeState, settings: Settings, clone_url: str = "", default_branch: str = "master", git_dir: str = ""
) -> None:
    """Make the fake HTTP forge answer for every sample repository (all cloning from `clone_url`,
    the file API reading the local repository `git_dir`)."""
    for (forge, project_id), path in SAMPLE_PROJECTS.items():
        url = clone_url or f"{forge_host(settings, forge)}/{path}.git"
        state.add_project(forge, FakeProject(id=project_id, path=path, clone_url=url, default_branch=default_branch,
                                             git_dir=git_dir))


def gitlab_note(text: str, on: str = "issue", **attrs: Any) -> dict[str, Any]:
    """`note.issue.json` (issue 17 of project 5) or `note.merge_request.json` (MR 1) saying `text`."""
    payload = sample("gitlab/note.issue.json" if on == "issue" else "gitlab/note.merge_request.json")
    payload["object_attributes"]["note"] = text
    payload["object_attributes"].update(attrs)
    return payload


def github_comment(text: str, on: str = "issue", **comment: Any) -> dict[str, Any]:
    """`issue_comment.created.json` on issue 1, or (derived) on pull request 1, saying `text`."""
    payload = sample("github/issue_comment.created.json")
    payload["comment"]["body"] = text
    payload["comment"].update(comment)
    if on == "change":
        url = f"https://api.github.com/repos/{GITHUB_REPO}/pulls/1"
        payload["issue"]["pull_request"] = {
            "url": url,
            "html_url": f"https://github.com/{GITHUB_REPO}/pull/1",
            "diff_url": f"https://github.com/{GITHUB_REPO}/pull/1.diff",
            "patch_url": f"https://github.com/{GITHUB_REPO}/pull/1.patch",
            "merged_at": None,
        }
    return payload
