"""Error answers as each forge documents them, for injected faults and refused tokens.

GitHub (REST docs, "Troubleshooting" and "Rate limits for the REST API"): a JSON body with `message`,
`documentation_url` and `status`; a spent primary quota answers 403 or 429 with
`x-ratelimit-remaining: 0` and `x-ratelimit-reset` (epoch seconds); a secondary limit answers 403 or
429 naming the secondary rate limit, with `retry-after` when GitHub sends one. GitLab (REST docs,
"Data validation and error reporting"; "Rate limits"): `{"message": ...}` or `{"error": ...}`, and
its rate limiter answers 429 with the plain text "Retry later" and the `RateLimit-*` headers and
`Retry-After`.
"""

from __future__ import annotations

import time
from email.utils import formatdate

from starlette.responses import JSONResponse, PlainTextResponse, Response

from tests.fakes import github_shapes

GITHUB_MESSAGES = {
    401: "Bad credentials",
    403: "Resource not accessible by integration",
    404: "Not Found",
    409: "Conflict",
    422: "Validation Failed",
    500: "Server Error",
    502: "Server Error",
    503: "Service Unavailable",
}
GITLAB_MESSAGES = {401: "401 Unauthorized", 403: "403 Forbidden", 404: "404 Not found", 409: "409 Conflict",
                   422: "422 Unprocessable Entity", 500: "500 Internal Server Error", 502: "502 Bad Gateway",
                   503: "503 Service Unavailable"}
SECONDARY = ("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you "
             "reach out to GitHub Support for help, please include the request ID 0000:0000:0000.")
PRIMARY = "API rate limit exceeded for user ID 1."


def github_rate_limit(status: int = 403, *, retry_after: int | None = None, reset_in: int | None = None,
                      secondary: bool = True) -> tuple[int, dict[str, str], str]:
    """(status, headers, message) of a rate-limited GitHub answer: primary (quota spent) or secondary."""
    headers = {"x-ratelimit-limit": "5000", "x-ratelimit-resource": "core"}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    if reset_in is not None:
        headers |= {"x-ratelimit-remaining": "0", "x-ratelimit-used": "5000",
                    "x-ratelimit-reset": str(int(time.time()) + reset_in)}
    else:
        headers |= {"x-ratelimit-remaining": "4000", "x-ratelimit-used": "1000",
                    "x-ratelimit-reset": str(int(time.time()) + 3600)}
    return status, headers, SECONDARY if secondary else PRIMARY


def gitlab_rate_limit(*, retry_after: int | None = 30, reset_in: int = 30) -> tuple[int, dict[str, str], str]:
    """(status, headers, message) of GitLab's rate limiter refusing a request."""
    reset = int(time.time()) + reset_in
    headers = {"RateLimit-Name": "throttle_authenticated_api", "RateLimit-Limit": "60", "RateLimit-Observed": "61",
               "RateLimit-Remaining": "0", "RateLimit-Reset": str(reset),
               "RateLimit-ResetTime": formatdate(reset, usegmt=True)}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return 429, headers, "Retry later"


def answer(forge: str, status: int, headers: dict[str, str], message: str = "") -> Response:
    """The error answer `forge` gives with `status`, in its documented shape."""
    if forge == "gitlab":
        if status == 429:
            return PlainTextResponse((message or "Retry later") + "\n", status_code=429, headers=headers)
        return JSONResponse({"message": message or GITLAB_MESSAGES.get(status, f"{status} Error")},
                            status_code=status, headers=headers)
    body = github_shapes.error(status, message or GITHUB_MESSAGES.get(status, "Error"))
    return JSONResponse(body, status_code=status, headers=headers)
