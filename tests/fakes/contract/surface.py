"""The product's forge surface: every forge operation it calls, why, and what a token needs for it.

The contract layer fails any request the product makes to an operation not listed here, so a new
forge call cannot land without its entry (and so without its line in docs/forges.md, which
`scripts/gen-forge-docs` writes from this list; a test fails while the page is stale). Operation ids
are those of the forge's contract: GitHub's operationIds, GitLab's documented endpoints as named in
`tests.fakes.contract.gitlab_rest`.

Permissions are the forges' documented ones: for GitHub the fine-grained (and App) repository
permission, and the classic token scope; for GitLab the token scope (`read_api` suffices to read,
writing needs `api`) and the member role.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Use:
    forge: str
    operation: str
    method: str
    path: str
    purpose: str
    permission: str


GH_READ_META = "Metadata: read; classic `repo`"
GH_ISSUES_R = "Issues: read; classic `repo`"
GH_ISSUES_W = "Issues: write (Pull requests: write on a pull request); classic `repo`"
GH_PULLS_R = "Pull requests: read; classic `repo`"
GH_PULLS_W = "Pull requests: write; classic `repo`"
GH_CONTENTS_R = "Contents: read; classic `repo`"
GH_HOOKS_R = "Webhooks: read; classic `admin:repo_hook` (or `read:repo_hook`)"
GH_HOOKS_W = "Webhooks: write; classic `admin:repo_hook` (or `write:repo_hook`)"
GL_READ = "scope `read_api` (or `api`); role Reporter"
GL_WRITE = "scope `api`; role Reporter"

USES = (
    # --- GitHub -----------------------------------------------------------------------------------
    Use("github", "repos/get", "GET", "/repos/{owner}/{repo}",
        "the repository's own record (id, default branch, clone URL) by name", GH_READ_META),
    Use("github", "repos/get (by id)", "GET", "/repositories/{repository_id}",
        "the same record by the webhook's immutable repository id", GH_READ_META),
    Use("github", "users/get-authenticated", "GET", "/user", "the token's own login (the bot ignores itself)",
        "none beyond a valid token"),
    Use("github", "users/list-ssh-signing-keys-for-authenticated-user", "GET", "/user/ssh_signing_keys",
        "`forgebot check`: whether the bot's commit signing key is the account's", "classic `read:ssh_signing_key` "
        "(without it the check says it cannot tell); fine-grained: SSH signing keys: read"),
    Use("github", "apps/get-authenticated", "GET", "/app", "a GitHub App's slug: the bot is `<slug>[bot]`",
        "the App's JWT"),
    Use("github", "apps/create-installation-access-token", "POST", "/app/installations/{installation_id}/access_tokens",
        "an installation token for an App, refreshed before it expires", "the App's JWT"),
    Use("github", "issues/get", "GET", "/repos/{owner}/{repo}/issues/{issue_number}",
        "the labeled issue: title, body, labels, author", GH_ISSUES_R),
    Use("github", "issues/list-for-repo", "GET", "/repos/{owner}/{repo}/issues",
        "closed issues since the last sync, for the memory of past work", GH_ISSUES_R),
    Use("github", "issues/list-comments", "GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "the conversation, and finding the bot's marked comments again", GH_ISSUES_R),
    Use("github", "issues/create-comment", "POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "status, reports, questions, replies", GH_ISSUES_W),
    Use("github", "issues/get-comment", "GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        "the comment a reply quotes", GH_ISSUES_R),
    Use("github", "issues/update-comment", "PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        "the status comment, edited in place", GH_ISSUES_W),
    Use("github", "reactions/create-for-issue", "POST", "/repos/{owner}/{repo}/issues/{issue_number}/reactions",
        "the acknowledgement reaction on a labeled issue", GH_ISSUES_W),
    Use("github", "reactions/create-for-issue-comment", "POST",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", "the acknowledgement of a command comment",
        GH_ISSUES_W),
    Use("github", "reactions/create-for-pull-request-review-comment", "POST",
        "/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions", "the acknowledgement of a diff comment",
        GH_PULLS_W),
    Use("github", "repos/get-collaborator-permission-level", "GET",
        "/repos/{owner}/{repo}/collaborators/{username}/permission",
        "the commenter's role before acting on a command", GH_READ_META),
    Use("github", "repos/get-content", "GET", "/repos/{owner}/{repo}/contents/{path}",
        "the repository's `.forgebot.yml` on its default branch", GH_CONTENTS_R),
    Use("github", "repos/list-webhooks", "GET", "/repos/{owner}/{repo}/hooks",
        "`forgebot hooks`: the hook already registered", GH_HOOKS_R),
    Use("github", "repos/create-webhook", "POST", "/repos/{owner}/{repo}/hooks", "`forgebot hooks --register`",
        GH_HOOKS_W),
    Use("github", "repos/list-webhook-deliveries", "GET", "/repos/{owner}/{repo}/hooks/{hook_id}/deliveries",
        "`forgebot hooks --redeliver`: the hook's recent deliveries and their answers", GH_HOOKS_R),
    Use("github", "repos/redeliver-webhook-delivery", "POST",
        "/repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{delivery_id}/attempts",
        "`forgebot hooks --redeliver`: a delivery no attempt of which was answered 2xx, sent again", GH_HOOKS_W),
    Use("github", "apps/get-webhook-config-for-app", "GET", "/app/hook/config",
        "`forgebot hooks` with a GitHub App: where the App's own webhook delivers", "the App's JWT"),
    Use("github", "apps/list-webhook-deliveries", "GET", "/app/hook/deliveries",
        "`forgebot hooks` with a GitHub App: the App's webhook's recent deliveries and their answers", "the App's JWT"),
    Use("github", "apps/redeliver-webhook-delivery", "POST", "/app/hook/deliveries/{delivery_id}/attempts",
        "`forgebot hooks --redeliver` with a GitHub App: a delivery no attempt of which was answered 2xx, sent again",
        "the App's JWT"),
    Use("github", "repos/update-webhook", "PATCH", "/repos/{owner}/{repo}/hooks/{hook_id}",
        "`forgebot hooks --register`: a new URL or secret", GH_HOOKS_W),
    Use("github", "pulls/list", "GET", "/repos/{owner}/{repo}/pulls",
        "the open pull request of a branch; merged ones for the memory", GH_PULLS_R),
    Use("github", "pulls/create", "POST", "/repos/{owner}/{repo}/pulls", "the bot's pull request", GH_PULLS_W),
    Use("github", "pulls/update", "PATCH", "/repos/{owner}/{repo}/pulls/{pull_number}",
        "the description of the bot's pull request, when a later task replaced its work", GH_PULLS_W),
    Use("github", "pulls/get", "GET", "/repos/{owner}/{repo}/pulls/{pull_number}",
        "branches and SHAs of a pull request under review", GH_PULLS_R),
    Use("github", "pulls/list-files", "GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files",
        "the diff a review reads and anchors notes on", GH_PULLS_R),
    Use("github", "pulls/list-review-comments", "GET", "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
        "diff comments and threads", GH_PULLS_R),
    Use("github", "pulls/get-review-comment", "GET", "/repos/{owner}/{repo}/pulls/comments/{comment_id}",
        "the diff comment a reply quotes", GH_PULLS_R),
    Use("github", "pulls/update-review-comment", "PATCH", "/repos/{owner}/{repo}/pulls/comments/{comment_id}",
        "a marked diff comment, edited in place", GH_PULLS_W),
    Use("github", "pulls/create-reply-for-review-comment", "POST",
        "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", "a reply in a diff thread",
        GH_PULLS_W),
    Use("github", "pulls/create-review", "POST", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        "the review's notes on diff lines, all in one review", GH_PULLS_W),
    Use("github", "graphql query repository", "POST", "/graphql",
        "a pull request's review threads (REST has no thread ids)", GH_PULLS_R),
    Use("github", "graphql mutation resolveReviewThread", "POST", "/graphql", "resolving a diff thread",
        GH_PULLS_W),
    # --- GitLab -----------------------------------------------------------------------------------
    Use("gitlab", "users/current", "GET", "/user", "the token's own user (the bot ignores itself)",
        "scope `read_user` (or `read_api`)"),
    Use("gitlab", "user-keys/list", "GET", "/user/keys",
        "`forgebot check`: whether the bot's commit signing key is the account's, for signing",
        "scope `read_user` (or `api`)"),
    Use("gitlab", "personal-access-tokens/self", "GET", "/personal_access_tokens/self",
        "the token's own scopes and expiry (`forgebot check`: a token without `api` cannot write)",
        "any scope (the token's own record)"),
    Use("gitlab", "projects/get", "GET", "/projects/{id}", "the project's own record by id or path, and who "
        "may see it (no merge request for a confidential issue outside a private project)", GL_READ),
    Use("gitlab", "hooks/list", "GET", "/projects/{id}/hooks", "`forgebot hooks`: the hook already registered",
        "scope `read_api`; role Maintainer"),
    Use("gitlab", "hooks/create", "POST", "/projects/{id}/hooks", "`forgebot hooks --register`",
        "scope `api`; role Maintainer"),
    Use("gitlab", "hooks/edit", "PUT", "/projects/{id}/hooks/{hook_id}",
        "`forgebot hooks --register`: a new URL or token", "scope `api`; role Maintainer"),
    Use("gitlab", "hooks/test", "POST", "/projects/{id}/hooks/{hook_id}/test/{trigger}",
        "`forgebot hooks --register`: a test push to a hook GitLab disabled after failing deliveries (a test "
        "answered 2xx enables it)", "scope `api`; role Maintainer"),
    Use("gitlab", "hooks/get", "GET", "/projects/{id}/hooks/{hook_id}",
        "`forgebot hooks --register`: the hook after its test", "scope `read_api`; role Maintainer"),
    Use("gitlab", "hooks/events", "GET", "/projects/{id}/hooks/{hook_id}/events",
        "`forgebot hooks`: the newest delivery's answer; `--redeliver`: the hook's deliveries of the last 7 days "
        "and their answers (GitLab 17.3)",
        "scope `read_api`; role Maintainer"),
    Use("gitlab", "hooks/resend-event", "POST", "/projects/{id}/hooks/{hook_id}/events/{hook_event_id}/resend",
        "`forgebot hooks --redeliver`: a delivery no attempt of which was answered 2xx, sent again (GitLab 17.4; "
        "5 a minute)", "scope `api`; role Maintainer"),
    Use("gitlab", "issues/get", "GET", "/projects/{id}/issues/{issue_iid}",
        "the labeled issue: title, description, labels, author", GL_READ),
    Use("gitlab", "issues/list", "GET", "/projects/{id}/issues", "closed issues since the last sync, for the memory",
        GL_READ),
    Use("gitlab", "repository-files/raw", "GET", "/projects/{id}/repository/files/{file_path}/raw",
        "the repository's `.forgebot.yml` on its default branch", GL_READ),
    Use("gitlab", "merge-requests/list", "GET", "/projects/{id}/merge_requests",
        "the open merge request of a branch; merged ones for the memory", GL_READ),
    Use("gitlab", "merge-requests/create", "POST", "/projects/{id}/merge_requests", "the bot's merge request",
        "scope `api`; role Developer"),
    Use("gitlab", "merge-requests/update", "PUT", "/projects/{id}/merge_requests/{merge_request_iid}",
        "the description of the bot's merge request, when a later task replaced its work",
        "scope `api`; role Developer"),
    Use("gitlab", "merge-requests/get", "GET", "/projects/{id}/merge_requests/{merge_request_iid}",
        "branches and state of a merge request under review", GL_READ),
    Use("gitlab", "merge-requests/diffs", "GET", "/projects/{id}/merge_requests/{merge_request_iid}/diffs",
        "the diff a review reads and anchors notes on", GL_READ),
    Use("gitlab", "merge-requests/changes", "GET", "/projects/{id}/merge_requests/{merge_request_iid}/changes",
        "the same diff on a GitLab before 15.7, which has no `/diffs`", GL_READ),
    Use("gitlab", "merge-requests/versions", "GET", "/projects/{id}/merge_requests/{merge_request_iid}/versions",
        "the latest version's SHAs, which diff positions must use", GL_READ),
    Use("gitlab", "members/get-all", "GET", "/projects/{id}/members/all/{user_id}",
        "the commenter's effective role before acting on a command", GL_READ),
    *(Use("gitlab", f"{op}-{kind}", method, f"/projects/{{id}}/{path}/{{{iid}}}{tail}", purpose, permission)
      for kind, path, iid in (("issue", "issues", "issue_iid"),
                              ("merge-request", "merge_requests", "merge_request_iid"))
      for op, method, tail, purpose, permission in (
          ("notes/create", "POST", "/notes", "status, reports, questions", GL_WRITE),
          ("notes/edit", "PUT", "/notes/{note_id}", "the status comment, edited in place", GL_WRITE),
          ("award-emoji/create", "POST", "/award_emoji", "the acknowledgement reaction", GL_WRITE),
          ("award-emoji/create-on-note", "POST", "/notes/{note_id}/award_emoji", "the acknowledgement of a command",
           GL_WRITE),
          ("discussions/list", "GET", "/discussions", "the conversation with its threads", GL_READ),
          ("discussions/add-note", "POST", "/discussions/{discussion_id}/notes", "a reply in a thread", GL_WRITE),
      )),
    Use("gitlab", "discussions/create-merge-request", "POST",
        "/projects/{id}/merge_requests/{merge_request_iid}/discussions", "a review's notes on diff lines", GL_WRITE),
    Use("gitlab", "discussions/resolve-merge-request", "PUT",
        "/projects/{id}/merge_requests/{merge_request_iid}/discussions/{discussion_id}", "resolving a thread",
        GL_WRITE),
)

BY_KEY = {(use.forge, use.operation): use for use in USES}


def known(forge: str, operation: str) -> bool:
    return (forge, operation) in BY_KEY
