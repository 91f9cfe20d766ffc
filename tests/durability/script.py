"""The scripted model's answers for the durability tests: one analysis report per task."""

from __future__ import annotations

from graph.schemas import AcceptanceCriterion, Analysis, Decomposition, Evidence

DECOMPOSITION = Decomposition(
    criteria=[AcceptanceCriterion(id=1, text="The API can create, update and delete a file")],
    assumptions=["Files are addressed by repository path"],
)
ANALYSIS = Analysis(
    summary="The file API lives in the repository service.",
    affected_files=["src/Files/Api.php"],
    evidence=[Evidence(path="src/Files/Api.php", start_line=10, end_line=30, note="current read-only API")],
    impact="Callers of Api::read are unaffected.",
    risks=["Path traversal in file names"],
)
REPORT_HEADING = "### Analysis"
