"""Variants of the verbatim forge samples that the samples do not cover, derived in code.

GitHub publishes no `issue_comment` example on a pull request: `github_pr_comment` adds the
`issue.pull_request` object GitHub sends for comments on PRs to `issue_comment.created.json`.
GitLab's doc examples omit `discussion_id`; `gitlab_note` adds it as the hook builder sends it.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.samples import sample

GITHUB_REPO = "Codertocat/Hello-World"
GITLAB_BOT_ID = 99
GITHUB_BOT = "forgebot[bot]"


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
