"""PHP's tree-sitter grammar, made once, and the ids of the fields the PHP extractor reads.

The extractor's modules (`parse`, `definitions`, `receivers`, `callables`) look up about 310,000 fields
in Symfony's code; by id (`treewalk.field_ids`) each lookup skips tree-sitter's comparison of the name
with every field name of the grammar, half its cost. They read nodes of this grammar only.
"""

from __future__ import annotations

import tree_sitter
import tree_sitter_php

from project.index.treewalk import field_ids

GRAMMAR = tree_sitter.Language(tree_sitter_php.language_php())
(ALIAS, ARGUMENTS, BODY, FUNCTION, LEFT, NAME, OBJECT, PARAMETERS, RIGHT, SCOPE, TYPE) = field_ids(
    GRAMMAR, "alias", "arguments", "body", "function", "left", "name", "object", "parameters", "right", "scope",
    "type")
