"""GitHub Actions workflow commands: what the runner would misread is escaped, and only findings are annotated."""

from __future__ import annotations

from kubelet_dra.workbench import ghactions, junit


def test_a_findings_name_and_message_reach_github_whole():
    case = junit.Case("UNP-003 a: b, c", "x", 1.0, junit.FAILED, "100% broken\nsecond line", file="a,b.yaml", line=7)
    [line] = ghactions.commands([case])
    assert line == "::error file=a%2Cb.yaml,line=7,title=UNP-003 a%3A b%2C c::100%25 broken%0Asecond line"


def test_passed_and_skipped_cases_are_no_annotation_and_the_summary_says_so():
    cases = [junit.Case("fine", "x", 1.0), junit.Case("later", "x", 0.0, junit.SKIPPED, "not here")]
    assert ghactions.commands(cases) == []
    assert "No failure and no warning in 2 case(s)." in ghactions.summary("suite", "all | good", cases)
    assert "all \\| good" in ghactions.summary("suite", "all | good", cases)
