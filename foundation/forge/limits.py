"""The forges' documented size and page limits, in one place for both adapters and the fake.

- GitLab notes hold at most 1,000,000 characters and a merge request description 1,048,576
  (GitLab's API documentation for notes and merge requests).
- GitHub comments, pull request bodies and review comments hold at most 65,536 characters.
- Lists: both REST APIs answer at most 100 items a page (`per_page`), and a GitHub GraphQL connection
  at most 100 nodes (`first`); longer lists are read page by page.
- A hook's deliveries sent again (`redeliver`): the newest 1,000 of what the forge keeps.
"""

from __future__ import annotations

GITLAB_COMMENT_LIMIT = 1_000_000
GITLAB_DESCRIPTION_LIMIT = 1_048_576
GITHUB_COMMENT_LIMIT = 65_536
MAX_PAGE = 100
# the newest deliveries `redeliver` reads of one hook: a GitLab hook event holds the whole request and
# answer (tens of KB), and a busy project's 7 days hold thousands; past this, the oldest are not sent again
REDELIVERY_WINDOW = 1_000
