"""Criteria come from what the forge shows of a description: not from a template's HTML comments or
from fenced code (GitHub's and GitLab's pull request templates are full of commented-out checklists)."""

from __future__ import annotations

from graph.nodes.review_intake import list_items, shown_lines

TEMPLATE = """## Description
<!-- Describe your changes in detail -->
Doubles totals.

## Checklist
<!--
- [ ] I have read the CONTRIBUTING document
- [ ] My code follows the code style
-->
- [x] Tests added

## How to test
````
- [ ] a box in a shell transcript
```
- [ ] still in the four-backtick block
~~~
````
- [ ] Docs updated
"""


def test_a_templates_comments_and_code_state_no_criteria() -> None:
    assert list_items(TEMPLATE) == ["Tests added", "Docs updated"]


def test_commented_examples_under_a_criteria_heading_are_not_criteria() -> None:
    body = ("## Acceptance criteria\n<!-- list what must hold, e.g.:\n- the API returns 404 for unknown ids -->\n"
            "- Totals double\n- Runner keeps working <!-- ask Bob -->\n")
    assert list_items(body) == ["Totals double", "Runner keeps working"]


def test_an_unclosed_comment_or_fence_hides_the_rest_as_rendered() -> None:
    assert list_items("## Criteria\n- alpha\n<!-- draft\n- beta\n") == ["alpha"]
    assert list_items("## Criteria\n- alpha\n~~~\n- beta\n") == ["alpha"]
    assert shown_lines("x\n    ```\n- b\n") == ["x", "    ```", "- b"]  # four spaces: indented code, no fence
