"""What a collected case keeps of itself: where to read it again, not its text.

A case's prompts, expected answer and workspace can be large (a LongMemEval
haystack is megabytes), and a run of 100,000 cases collects every one before
the first runs. So a collected case keeps a way to read itself again when it
runs (its folder, or its generated suite and index; see
:class:`~pytest_recall.suites.suite_file.GeneratedSuite`) and what collection
needs (:class:`~pytest_recall.cases.model.CaseOutline`), and only the cases
in flight are in memory whole.

A case read from disk carries the fingerprint of what was collected: files
edited between collection and run (by hand, or by another case's agent) make
it refuse to run rather than run something else under the collected name,
and the item scores it 0, as it scores a case whose files change while it
runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from pytest_recall.cases.model import Case, CaseError, plain_data


def fingerprint(case: Case) -> bytes:
    """Everything that decides a verdict (its content hash) and what a trap task adds (its judge's digest)."""
    blob = json.dumps([case.content_hash, plain_data(case.extra)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).digest()


@dataclass(frozen=True, slots=True)
class ReadAgain:
    """A case read from its files again when it runs, refused unless they still hold the case collected."""

    read: Callable[[], Case]
    collected: bytes

    @classmethod
    def of(cls, read: Callable[[], Case], case: Case) -> ReadAgain:
        return cls(read, fingerprint(case))

    def __call__(self) -> Case:
        __tracebackhide__ = True
        case = self.read()
        if fingerprint(case) != self.collected:
            raise CaseError(f"{case.source}: its files no longer hold the case collected")
        return case
