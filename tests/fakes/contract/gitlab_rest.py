"""GitLab's REST contract: the API v4 operations the product calls, from GitLab's documentation.

GitLab publishes no OpenAPI description for these endpoints, so the operations are transcribed here
from its API documentation (each entry names its page under https://docs.gitlab.com/api/): method,
path, the documented attributes with their types, and the response contract, which is, in order:

- GitLab's own response schema, the JSON schema its test suite checks the endpoint against
  (`shared/forge-contract/gitlab/schemas/`; the non-standard types `date` and `uri` read as string,
  and `issues.json`'s list items checked against `issue.json`, as the file means);
- else the documentation's example response (`forge-samples/gitlab/api/`): a field the fake answers
  must appear in an example with the same JSON type, and a field every example instance has is
  required (an object or value seen once requires nothing and may be null: one example cannot tell);
- else nothing: the operation is still matched and its request checked, and its responses are counted
  as unchecked in the suite's summary and in docs/forges.md.

Statuses an operation does not list are checked against GitLab's documented error format: a JSON
object with `message` (a string, or an object of field errors) or `error`; a 429 from GitLab's rate
limiter is plain text ("Retry later").
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema

from tests.fakes.contract import documents
from tests.fakes.contract.operations import Check, Matcher, Operation, Param, schema_check

PREFIX = "/gitlab/api/v4"
STRING: dict[str, Any] = {"type": "string"}
INTEGER: dict[str, Any] = {"type": "integer"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
PAGES = {"page": INTEGER, "per_page": {"type": "integer", "minimum": 1, "maximum": 100}}
SORT = {"type": "string", "enum": ["asc", "desc"]}
ERROR: dict[str, Any] = {
    "type": "object",
    "anyOf": [
        {"required": ["message"], "properties": {"message": {"type": ["string", "object"]}}},
        {"required": ["error"], "properties": {"error": {"type": "string"}}},
    ],
}
# doc/api/project_webhooks.md, "Add a webhook to a project" / "Edit a project webhook"
_HOOK_EVENTS = ("push_events", "issues_events", "confidential_issues_events", "merge_requests_events",
                "tag_push_events", "note_events", "confidential_note_events", "job_events", "pipeline_events",
                "wiki_page_events", "deployment_events", "feature_flag_events", "releases_events", "emoji_events",
                "resource_access_token_events", "member_events", "project_events", "milestone_events",
                "vulnerability_events", "enable_ssl_verification")
HOOK_BODY = {"url": STRING, "name": STRING, "description": STRING, "token": STRING,
             "push_events_branch_filter": STRING, "branch_filter_strategy": STRING,
             "custom_webhook_template": STRING, "custom_headers": {"type": "array"},
             "url_variables": {"type": "array"}, **dict.fromkeys(_HOOK_EVENTS, BOOLEAN)}
# doc/api/discussions.md, "Create a new thread in the merge request diff": the `position` attributes
_LINE_END = {"type": "object", "additionalProperties": False,
             "properties": {"line_code": STRING, "type": {"enum": ["new", "old"]},
                            "old_line": {"type": ["integer", "null"]}, "new_line": {"type": ["integer", "null"]}}}
POSITION = {
    "type": "object", "additionalProperties": False,
    "required": ["base_sha", "head_sha", "start_sha", "position_type"],
    "properties": {
        "base_sha": STRING, "head_sha": STRING, "start_sha": STRING,
        "position_type": {"enum": ["text", "image", "file"]}, "new_path": STRING, "old_path": STRING,
        "new_line": INTEGER, "old_line": INTEGER,
        "line_range": {"type": "object", "additionalProperties": False,
                       "properties": {"start": _LINE_END, "end": _LINE_END}},
        "width": INTEGER, "height": INTEGER, "x": {"type": "number"}, "y": {"type": "number"},
    },
    # text positions need both paths (the documentation: "required for text")
    "anyOf": [{"properties": {"position_type": {"enum": ["image", "file"]}}},
              {"required": ["new_path", "old_path"]}],
}

# ("schema", file) | ("item", file) | ("project", file) | ("changes", file) | ("items", file) | ("examples", files)
# | ("none", why)
Response = tuple[str, Any]


def _load(path: Path) -> Any:
    """A schema file with GitLab's `date`/`uri` pseudo-types read as string."""

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: fix(v) for k, v in node.items()}
        kind = out.get("type")
        if kind in ("date", "uri"):
            out["type"] = "string"
        elif isinstance(kind, list):
            out["type"] = ["string" if k in ("date", "uri") else k for k in kind]
        return out

    return fix(json.loads(path.read_bytes()))


@cache
def _registry() -> referencing.Registry[Any]:
    def retrieve(uri: str) -> referencing.Resource[Any]:
        return referencing.Resource(_load(Path(uri.removeprefix("file://"))), referencing.jsonschema.DRAFT4)

    registry: referencing.Registry[Any] = referencing.Registry(retrieve=retrieve)  # type: ignore[call-arg]
    return registry


def _file_uri(name: str) -> str:
    return (documents.gitlab_schemas() / name).as_uri()


def _schema(schema: Mapping[str, Any]) -> Check:
    return schema_check(jsonschema.Draft4Validator(schema, registry=_registry()))


def derived(examples: Sequence[Any]) -> dict[str, Any]:
    """A schema from documentation examples: their fields and types; fields every instance has required."""
    values = [v for v in examples if v is not None]
    kinds = {_kind(v) for v in values}
    if not values:
        return {}  # the documentation shows only null: any value
    if kinds == {"object"}:
        keys = sorted({k for v in values for k in v})
        schema: dict[str, Any] = {
            "type": ["object", "null"] if len(values) < len(examples) else "object",
            "additionalProperties": False,
            "properties": {k: derived([v.get(k) for v in values if k in v]) for k in keys},
        }
        if len(values) > 1:
            schema["required"] = [k for k in keys if all(k in v for v in values)]
        return schema
    if kinds == {"array"}:
        items = [i for v in values for i in v if isinstance(i, dict)] or [i for v in values for i in v]
        return {"type": "array", "items": derived(items)} if items else {"type": "array"}
    # one example cannot tell whether the field may be null either
    found = sorted(kinds | ({"null"} if len(values) < len(examples) or len(examples) == 1 else set()))
    if "integer" in found and "number" in found:
        found.remove("integer")
    return {"type": found if len(found) > 1 else found[0]}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {dict: "object", list: "array", str: "string", float: "number"}[type(value)]


def _examples(files: Sequence[str], item: bool) -> dict[str, Any]:
    loaded = [json.loads((documents.SAMPLES / "gitlab" / "api" / f).read_bytes()) for f in files]
    instances = [i for doc in loaded for i in (doc if isinstance(doc, list) else [doc])]
    schema = _with_note_flags(derived(instances))
    return schema if item else {"type": "array", "items": schema}


def _with_note_flags(schema: dict[str, Any]) -> dict[str, Any]:
    """A discussion's notes with `confidential` and `internal`, which the documentation's examples predate.

    A discussion's notes are the API's Note entity (lib/api/entities/note.rb), whose published schema
    (`public_api/v4/notes.json`) has both booleans: an internal note says so only there.
    """
    notes = schema.get("properties", {}).get("notes", {}).get("items")
    if isinstance(notes, dict) and "properties" in notes:
        flags = _load(documents.gitlab_schemas() / "public_api/v4/notes.json")["items"]["properties"]
        notes["properties"] |= {name: flags[name] for name in ("confidential", "internal")}
    return schema


def _with_visibility(name: str) -> dict[str, Any]:
    """An item of `projects.json` with `visibility`, which the schema (from before the field) lacks and forbids.

    doc/api/projects.md, "Project visibility level": "The visibility level is determined by the
    visibility field in the project", one of private, internal, public. Optional: the bot treats a
    project whose answer leaves it out as public (`graph.disclosure`).
    """
    item: dict[str, Any] = copy.deepcopy(_load(documents.gitlab_schemas() / name)["items"])
    item["properties"]["visibility"] = {"enum": ["private", "internal", "public"]}
    return item


def _check(spec: Response) -> Check | str | None:
    kind, what = spec
    if kind == "project":
        return _schema(_with_visibility(what))
    if kind == "changes":  # the merge request, and its diffs under `changes`
        return _schema({"allOf": [{"$ref": _file_uri(what)}, CHANGES]})
    if kind == "schema":
        return _schema({"$ref": _file_uri(what)})
    if kind == "item":
        return _schema({"$ref": _file_uri(what) + "#/items"})
    if kind == "items":  # a list whose file means its items to follow another file
        return _schema({"type": "array", "items": {"$ref": _file_uri(what)}})
    if kind == "examples":
        files, item = what
        return _schema(_examples(files, item))
    return None  # ("none", reason): no schema and no example exist


def _error() -> Check:
    check = _schema(ERROR)
    return check


def op(op_id: str, method: str, template: str, responses: Mapping[str, Response],
       query: Mapping[str, Any] | None = None, body: Mapping[str, Any] | None = None,
       required: Sequence[str] = (), body_extra: Mapping[str, Any] | None = None) -> Operation:
    params = {name.strip(":"): Param(name.strip(":"), "path", INTEGER if name.endswith("iid") or
                                     name.endswith("_id") and name != ":discussion_id" else STRING, True)
              for name in template.split("/") if name.startswith(":")}
    params |= {name: Param(name, "query", schema) for name, schema in (query or {}).items()}
    path = "/".join("{" + s[1:] + "}" if s.startswith(":") else s for s in template.split("/"))
    operation = Operation(forge="gitlab", id=op_id, method=method, template=path, params=params)
    if body is not None:
        schema = {"type": "object", "additionalProperties": False, "properties": {**body, **(body_extra or {})},
                  "required": list(required)}
        operation.body = lambda: _schema(schema)
        operation.body_required = True
    checks: dict[str, Callable[[], Check | str | None]] = {
        status: (lambda spec=spec: _check(spec)) for status, spec in responses.items()  # type: ignore[misc]
    }
    checks.setdefault("4XX", _error)
    checks.setdefault("5XX", _error)
    operation.responses = checks
    return operation


NOTE = ("item", "public_api/v4/notes.json")
_DIFF_FIELDS = ("old_path", "new_path", "a_mode", "b_mode", "diff", "new_file", "renamed_file", "deleted_file")
# `/changes` beside the merge request: doc/api/merge_requests.md lists these fields of each diff
CHANGES = {"type": "object", "required": ["changes"], "properties": {
    "overflow": BOOLEAN,
    "changes": {"type": "array", "items": {
        "type": "object", "required": list(_DIFF_FIELDS),
        "properties": {name: BOOLEAN if name.endswith("_file") else STRING for name in _DIFF_FIELDS}}}}}
DISCUSSIONS = ("examples", (("discussions.merge_request.list.response.json",
                             "discussions.merge_request.list.diff-note.response.json"), False))
DISCUSSION = ("examples", (("discussions.merge_request.list.response.json",
                            "discussions.merge_request.list.diff-note.response.json"), True))
NO_SCHEMA = ("none", "GitLab publishes no schema or example for it")
MR_LIST = {"state": {"enum": ["opened", "closed", "locked", "merged", "all"]},
           "order_by": {"enum": ["created_at", "updated_at", "title", "merged_at", "label_priority",
                                 "milestone_due", "popularity", "priority"]},
           "sort": SORT, "source_branch": STRING, "target_branch": STRING, "updated_after": STRING,
           "updated_before": STRING, "created_after": STRING, "created_before": STRING, "labels": STRING,
           "view": {"enum": ["simple"]}, "search": STRING, "author_id": INTEGER, "scope": STRING, **PAGES}
ISSUE_LIST = {"state": {"enum": ["opened", "closed", "all"]},
              "order_by": {"enum": ["created_at", "updated_at", "priority", "due_date", "relative_position",
                                    "label_priority", "milestone_due", "popularity", "weight", "title"]},
              "sort": SORT, "updated_after": STRING, "updated_before": STRING, "created_after": STRING,
              "created_before": STRING, "labels": STRING, "search": STRING, "author_id": INTEGER,
              "scope": STRING, "confidential": BOOLEAN, **PAGES}
MR_CREATE = {"source_branch": STRING, "target_branch": STRING, "title": STRING, "description": STRING,
             "assignee_id": INTEGER, "assignee_ids": {"type": "array", "items": INTEGER},
             "reviewer_ids": {"type": "array", "items": INTEGER}, "labels": STRING, "milestone_id": INTEGER,
             "remove_source_branch": BOOLEAN, "squash": BOOLEAN, "allow_collaboration": BOOLEAN,
             "allow_maintainer_to_push": BOOLEAN, "target_project_id": INTEGER, "merge_after": STRING}

# doc/api/merge_requests.md "Update MR": any of these, at least one
MR_UPDATE = {"target_branch": STRING, "title": STRING, "description": STRING, "assignee_id": INTEGER,
             "assignee_ids": {"type": "array", "items": INTEGER}, "reviewer_ids": {"type": "array", "items": INTEGER},
             "milestone_id": INTEGER, "labels": STRING, "add_labels": STRING, "remove_labels": STRING,
             "state_event": {"enum": ["close", "reopen"]}, "remove_source_branch": BOOLEAN, "squash": BOOLEAN,
             "discussion_locked": BOOLEAN, "allow_collaboration": BOOLEAN, "allow_maintainer_to_push": BOOLEAN,
             "merge_after": STRING}


def _noteables(op_id: str, method: str, tail: str, responses: Mapping[str, Response], **kwargs: Any) -> list[Operation]:
    """The same documented operation on issues and on merge requests."""
    return [op(f"{op_id}-issue", method, f"/projects/:id/issues/:issue_iid{tail}", responses, **kwargs),
            op(f"{op_id}-merge-request", method, f"/projects/:id/merge_requests/:merge_request_iid{tail}",
               responses, **kwargs)]


@cache
def operations() -> list[Operation]:
    return [
        # doc/api/users.md "Get the current user"; the response is a superset of the basic user
        op("users/current", "GET", "/user", {"200": ("schema", "public_api/v4/user/basic.json")}),
        # doc/api/user_keys.md "List your SSH keys": no schema published
        op("user-keys/list", "GET", "/user/keys", {"200": NO_SCHEMA}, query=PAGES),
        # doc/api/personal_access_tokens.md "Get single personal access token" (self): no schema published
        op("personal-access-tokens/self", "GET", "/personal_access_tokens/self", {"200": NO_SCHEMA}),
        # doc/api/projects.md "Get a single project"; projects.json describes the list's items, without `visibility`
        op("projects/get", "GET", "/projects/:id", {"200": ("project", "public_api/v4/projects.json")},
           query={"license": BOOLEAN, "statistics": BOOLEAN, "with_custom_attributes": BOOLEAN}),
        # doc/api/project_webhooks.md
        op("hooks/list", "GET", "/projects/:id/hooks", {"200": ("schema", "public_api/v4/project_hooks.json")},
           query=PAGES),
        op("hooks/create", "POST", "/projects/:id/hooks", {"201": ("schema", "public_api/v4/project_hook.json")},
           body=HOOK_BODY, required=["url"]),
        op("hooks/edit", "PUT", "/projects/:id/hooks/:hook_id", {"200": ("schema", "public_api/v4/project_hook.json")},
           body=HOOK_BODY, required=["url"]),
        op("hooks/get", "GET", "/projects/:id/hooks/:hook_id", {"200": ("schema", "public_api/v4/project_hook.json")}),
        # "Trigger a test project webhook" (GitLab 16.11): {"message": "201 Created"}; a 4xx in GitLab's error format
        # it takes no attributes; python-gitlab's `ProjectHook.test` posts an empty JSON object
        op("hooks/test", "POST", "/projects/:id/hooks/:hook_id/test/:trigger", {"201": NO_SCHEMA}, body={}),
        # "Get a list of project webhook events" (17.3), "Resend a project webhook event" (17.4)
        op("hooks/events", "GET", "/projects/:id/hooks/:hook_id/events", {"200": NO_SCHEMA},
           query={"status": {"type": ["integer", "string"]}, **PAGES}),
        op("hooks/resend-event", "POST", "/projects/:id/hooks/:hook_id/events/:hook_event_id/resend",
           {"201": NO_SCHEMA}, body={}),
        # doc/api/issues.md "List project issues", "Single project issue"
        op("issues/list", "GET", "/projects/:id/issues", {"200": ("items", "public_api/v4/issue.json")},
           query=ISSUE_LIST),
        op("issues/get", "GET", "/projects/:id/issues/:issue_iid", {"200": ("schema", "public_api/v4/issue.json")}),
        # doc/api/repository_files.md "Get raw file from repository": the file's bytes, no JSON
        op("repository-files/raw", "GET", "/projects/:id/repository/files/:file_path/raw",
           {"200": ("none", "raw file content")}, query={"ref": STRING, "lfs": BOOLEAN}),
        # doc/api/merge_requests.md
        op("merge-requests/list", "GET", "/projects/:id/merge_requests",
           {"200": ("schema", "public_api/v4/merge_requests.json")}, query=MR_LIST),
        op("merge-requests/create", "POST", "/projects/:id/merge_requests",
           {"201": ("schema", "public_api/v4/merge_request.json")}, body=MR_CREATE,
           required=["source_branch", "target_branch", "title"]),
        op("merge-requests/get", "GET", "/projects/:id/merge_requests/:merge_request_iid",
           {"200": ("schema", "public_api/v4/merge_request.json")},
           query={"render_html": BOOLEAN, "include_diverged_commits_count": BOOLEAN,
                  "include_rebase_in_progress": BOOLEAN}),
        op("merge-requests/update", "PUT", "/projects/:id/merge_requests/:merge_request_iid",
           {"200": ("schema", "public_api/v4/merge_request.json")}, body=MR_UPDATE),
        op("merge-requests/diffs", "GET", "/projects/:id/merge_requests/:merge_request_iid/diffs",
           {"200": NO_SCHEMA}, query={**PAGES, "unidiff": BOOLEAN}),
        # doc/api/merge_requests.md "Get single merge request changes" (deprecated in 15.7, the only way
        # before it): the merge request entity with its diffs, not paginated
        op("merge-requests/changes", "GET", "/projects/:id/merge_requests/:merge_request_iid/changes",
           {"200": ("changes", "public_api/v4/merge_request.json")}, query={"access_raw_diffs": BOOLEAN,
                                                                            "unidiff": BOOLEAN}),
        op("merge-requests/versions", "GET", "/projects/:id/merge_requests/:merge_request_iid/versions",
           {"200": ("examples", (("merge_requests.versions.response.excerpt.json",), False))}, query=PAGES),
        # doc/api/members.md "Get a member of a project, including inherited and invited members"
        op("members/get-all", "GET", "/projects/:id/members/all/:user_id",
           {"200": ("item", "public_api/v4/members.json")}),
        # doc/api/notes.md
        *_noteables("notes/create", "POST", "/notes", {"201": NOTE}, body={"body": STRING, "internal": BOOLEAN,
                    "confidential": BOOLEAN, "created_at": STRING}, required=["body"],
                    body_extra={"merge_request_diff_head_sha": STRING}),
        *_noteables("notes/edit", "PUT", "/notes/:note_id", {"200": NOTE},
                    body={"body": STRING, "confidential": BOOLEAN, "internal": BOOLEAN}),
        # doc/api/emoji_reactions.md (award emoji): no schema or example of the answer
        *_noteables("award-emoji/create", "POST", "/award_emoji", {"201": NO_SCHEMA}, body={"name": STRING},
                    required=["name"]),
        *_noteables("award-emoji/create-on-note", "POST", "/notes/:note_id/award_emoji", {"201": NO_SCHEMA},
                    body={"name": STRING}, required=["name"]),
        # doc/api/discussions.md
        *_noteables("discussions/list", "GET", "/discussions", {"200": DISCUSSIONS}, query=PAGES),
        *_noteables("discussions/add-note", "POST", "/discussions/:discussion_id/notes", {"201": NOTE},
                    body={"body": STRING, "created_at": STRING, "note_id": INTEGER}, required=["body"]),
        op("discussions/create-issue", "POST", "/projects/:id/issues/:issue_iid/discussions", {"201": DISCUSSION},
           body={"body": STRING, "created_at": STRING}, required=["body"]),
        op("discussions/create-merge-request", "POST", "/projects/:id/merge_requests/:merge_request_iid/discussions",
           {"201": DISCUSSION}, body={"body": STRING, "created_at": STRING, "commit_id": STRING,
                                      "position": POSITION}, required=["body"]),
        op("discussions/resolve-merge-request", "PUT",
           "/projects/:id/merge_requests/:merge_request_iid/discussions/:discussion_id", {"200": DISCUSSION},
           body={"resolved": BOOLEAN}, required=["resolved"]),
    ]


@cache
def matcher() -> Matcher:
    return Matcher(operations(), greedy=())
