"""The JUnit file a recall run writes is valid for the consumers that validate it, in every family.

The schema is the Jenkins ``junit-10.xsd`` that pytest's own tests use
(MIT, shipped as data in ``tests/schemas/``). Two adjustments are made in
code, here, and nowhere else:

- The file names the error element ``errors``, while pytest and every other
  JUnit writer write ``<error>``; pytest's own tests never validate a run
  with errors, so for ours the one name is corrected.
- ``xunit1``/``legacy`` has no schema file of its own: it is the same format
  plus ``<properties>`` in a testcase and its ``file``/``line`` attributes,
  which is what that family promises.
"""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from pytest_recall.plugin.junit import figures_block, parse_figures_block

SCHEMA = Path(__file__).parent / "schemas" / "junit-10.xsd"
ANSWER = "12345.67"
XS = "http://www.w3.org/2001/XMLSchema"


def schema_for(family: str) -> Any:
    tree = ET.parse(SCHEMA)
    root = tree.getroot()
    for element in root.iter(f"{{{XS}}}element"):
        if element.get("name") == "errors":
            element.set("name", "error")
        if element.get("ref") == "errors":
            element.set("ref", "error")
    if family == "xunit1":
        testcase = next(e for e in root.iter(f"{{{XS}}}element") if e.get("name") == "testcase")
        choice = testcase.find(f".//{{{XS}}}choice")
        assert choice is not None
        ET.SubElement(choice, f"{{{XS}}}element", ref="properties")
        complex_type = testcase.find(f"{{{XS}}}complexType")
        assert complex_type is not None
        for name in ("file", "line"):
            ET.SubElement(complex_type, f"{{{XS}}}attribute", name=name, type="xs:string")
    return xmlschema.XMLSchema(ET.tostring(root, encoding="unicode"))


def run_with_junit(recall_suite: Any, family: str, outcome: str) -> tuple[pytest.RunResult, Path]:
    recall_suite.add("remembers", ["remember 12345.67", "recall"], ANSWER, category="closing_balance")
    if outcome in ("failing", "errors"):
        recall_suite.add("forgets", ["say nothing", "say 99999.99"], ANSWER)
    if outcome == "errors":
        recall_suite.add("broken", ["remember 12345", "recall"], "12345")
    junit = recall_suite.pytester.path / "junit.xml"
    result = recall_suite.run(f"--junitxml={junit}", "-o", f"junit_family={family}")
    return result, junit


@pytest.mark.parametrize("outcome", ["passing", "failing", "errors"])
@pytest.mark.parametrize("family", ["xunit2", "xunit1", "legacy"])
def test_the_junit_file_is_valid_for_its_family(recall_suite: Any, family: str, outcome: str) -> None:
    result, junit = run_with_junit(recall_suite, family, outcome)
    expected = {"passing": {"passed": 1}, "failing": {"passed": 1, "failed": 1}, "errors": {"passed": 1, "failed": 1}}
    result.assert_outcomes(**expected[outcome], errors=1 if outcome == "errors" else 0)
    schema_for("xunit2" if family == "xunit2" else "xunit1").validate(str(junit))

    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    run = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert run["recall_passed"] in ("true", "false")
    cases = {tc.get("classname", "").rsplit(".", 1)[-1]: tc for tc in suite.findall("testcase")}
    remembers = cases["remembers"]
    if family == "xunit2":
        assert remembers.find("properties") is None
        out = remembers.find("system-out")
        assert out is not None and out.text is not None
        figures = parse_figures_block(out.text)
        assert figures["recall_score"] == "1.0"
        assert figures["recall_control"] == "false"
        assert figures["recall_cost_usd"] == ""  # missing: empty, never "None"
    else:
        properties = {p.get("name"): p.get("value") for p in remembers.findall("properties/property")}
        assert properties["recall_score"] == "1.0"
        assert properties["recall_control"] == "false"
        assert "recall_cost_usd" not in properties  # missing: no property, never "None"
    assert 'value="None"' not in junit.read_text(encoding="utf-8")
    assert 'value="True"' not in junit.read_text(encoding="utf-8")


def test_the_figures_block_reads_back_and_keeps_every_field_in_order() -> None:
    block = figures_block([("recall_score", "0.0"), ("recall_reason", "a\nb"), ("recall_reported", "x\x07y")])
    lines = block.splitlines()
    assert lines[0] == "[pytest-recall]"
    assert [line.split("=")[0] for line in lines[1:]][:3] == ["recall_score", "recall_category", "recall_reason"]
    figures = parse_figures_block("captured noise\n" + block)
    assert figures["recall_reason"] == "a b"
    assert figures["recall_reported"] == "x?y"
    assert figures["recall_category"] == ""


def test_reports_and_html_get_the_umask_mode_not_0600(recall_suite: Any) -> None:
    recall_suite.add("remembers", ["remember 12345.67", "recall"], ANSWER)
    html = recall_suite.pytester.path / "report.html"
    old = os.umask(0o022)
    try:
        recall_suite.run(f"--recall-html={html}").assert_outcomes(passed=1)
    finally:
        os.umask(old)
    for path in (recall_suite.report_path, html):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
