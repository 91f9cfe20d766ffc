"""Whether an issue's work may be published where the project shows it: its branch and merge request.

A GitLab confidential issue is seen only by the project's members (Reporter and up) and its author;
a merge request, its branch name (the issue's title), its description and its code by everyone who
can see the project: anybody when it is public, any signed-in user of the instance when it is
internal. Confidential issues are where security bugs are reported, so implementing one there
would publish the vulnerability and its fix before the release. GitLab itself offers a private fork
for that; forgebot opens nothing and says so on the issue (where only its readers see it).

Both facts are asked of the forge's API, never read from the payload, and asked again right before
the push: an issue is often made confidential minutes after it is filed, while the task works. A
project whose visibility the API does not tell is treated as public (fail closed). Analysis and plans
only comment on the issue itself and are not affected. A review reads the issues a merge request
closes for its criteria, and its comments are the merge request's: a confidential issue's text is
left out there by the same rule (`disclosable`).
"""

from __future__ import annotations

from foundation.forge import Forge, Issue, IssueRef, RepoRef


class Undisclosable(Exception):
    """The issue is confidential and the project would show its work to more people than may read it."""

    def __init__(self, visibility: str) -> None:
        self.visibility = visibility or "not told by the forge"
        super().__init__(f"the issue is confidential and the project's visibility is {self.visibility}")


def disclosable(issue: Issue, repo: RepoRef) -> bool:
    """Whether what `issue` says may go where everyone who sees `repo` reads it (`repo` as resolved)."""
    return not issue.confidential or repo.visibility == "private"


async def ensure_disclosable(forge: Forge, ref: IssueRef) -> None:
    """Raise `Undisclosable` when `ref` is confidential in a project that is not private (as the forge
    says now); a project's visibility is asked only for a confidential issue."""
    if ref.repo.forge != "gitlab":  # GitHub has no confidential issues; `forgebot run` no forge
        return
    issue = await forge.get_issue(ref, comments=False)
    if not issue.confidential:
        return
    repo = await forge.resolve_repo(ref.repo.id or ref.repo.project)
    if not disclosable(issue, repo):
        raise Undisclosable(repo.visibility)
