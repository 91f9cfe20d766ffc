"""Pagination as each forge documents it, for every list the fake forge answers.

GitHub: `page` and `per_page` (30 by default, at most 100), the next pages in a `Link` header
(`rel="next"`, `"last"`, `"first"`, `"prev"`). GitLab: the same parameters (20 by default, at most
100), `Link` too, and the `X-Page`, `X-Per-Page`, `X-Next-Page`, `X-Prev-Page`, `X-Total` and
`X-Total-Pages` headers (an empty `X-Next-Page` on the last page).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from starlette.requests import Request
from starlette.responses import JSONResponse

DEFAULT = {"github": 30, "gitlab": 20}


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw else default
    except ValueError:
        return default


def paginated(request: Request, items: Sequence[Any], forge: Literal["github", "gitlab"]) -> JSONResponse:
    """One page of `items` with the forge's pagination headers."""
    per_page = min(max(_int(request.query_params.get("per_page"), DEFAULT[forge]), 1), 100)
    page = max(_int(request.query_params.get("page"), 1), 1)
    last = max((len(items) + per_page - 1) // per_page, 1)
    body = list(items[(page - 1) * per_page : page * per_page])

    def url(number: int) -> str:
        return str(request.url.include_query_params(page=number, per_page=per_page))

    links = {"next": page + 1 if page < last else None, "last": last if page < last else None,
             "first": 1 if page > 1 else None, "prev": page - 1 if page > 1 else None}
    headers: dict[str, str] = {}
    link = ", ".join(f'<{url(n)}>; rel="{rel}"' for rel, n in links.items() if n is not None)
    if link:
        headers["Link"] = link
    if forge == "gitlab":
        headers |= {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(items)),
                    "X-Total-Pages": str(last), "X-Next-Page": str(page + 1) if page < last else "",
                    "X-Prev-Page": str(page - 1) if page > 1 else ""}
    return JSONResponse(body, headers=headers)
