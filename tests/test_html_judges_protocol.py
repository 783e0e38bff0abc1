"""The page's protocol table with a judges panel (issue 66, item 10): each file a judge names is shown once,
with the judges that name it, and each judge's row refers to its files by name, not by their hashes again."""

from __future__ import annotations

import hashlib
import re
import shlex
import sys

from test_rejudge import JUDGE, add_open

from conftest import RecallSuite


def test_a_panels_judge_files_are_hashed_once_on_the_page_and_judges_are_named(recall_suite: RecallSuite) -> None:
    add_open(recall_suite, "case_01_hedge", "Postgres or MySQL")
    folder = recall_suite.pytester.path
    (folder / "judge.py").write_text(JUDGE, encoding="utf-8")
    (folder / "prompt.txt").write_text("Is the answer right?", encoding="utf-8")
    judges = [
        f"--recall-judge-cmd={name}="
        + shlex.join([sys.executable, str(folder / "judge.py"), name, str(folder / f"{name}.jsonl"), "prompt.txt"])
        for name in ("strict", "lenient")
    ]
    html = folder / "report.html"

    recall_suite.run(*judges, f"--recall-html={html}").assert_outcomes(failed=1)

    page = html.read_text(encoding="utf-8")
    table = re.search(r'<table class="protocol">.*?</table>', page, re.S)
    assert table is not None
    rows = dict(re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>", table.group(0)))
    for name in ("judge.py", "prompt.txt"):
        digest = hashlib.sha256((folder / name).read_bytes()).hexdigest()[:12]
        # Once, beside the judges that name the file; not again under each judge.
        assert table.group(0).count(digest) == 1, name
        assert rows[f"judges.llm_judge.files_sha256.{name}"] == f"{digest} (judges strict, lenient)"
    for name in ("strict", "lenient"):
        assert rows[f"judges.llm_judge.judges[{name}].files_sha256"] == "judge.py, prompt.txt (hashes above)"
        assert rows[f"judges.llm_judge.judges[{name}].command"].startswith(sys.executable)
    assert rows["judges.llm_judge.score_by"] == "strict"
