"""What a collected case keeps of itself: where to read it again, not its text.

A case's prompts, expected answer and workspace can be large (a LongMemEval
haystack is megabytes), and a run of 100,000 cases collects every one before
the first runs. So a collected case keeps a way to read itself again when it
runs (its folder, or its generated suite and index; see
:class:`~pytest_recall.suites.suite_file.GeneratedSuite`) and what collection
needs (:class:`~pytest_recall.cases.model.CaseOutline`), and only the cases
in flight are in memory whole.

A case read from disk is checked against what was collected: files edited
between collection and run (by hand, or by another case's agent) make it
refuse to run rather than run something else under the collected name, and
the item scores it 0, as it scores a case whose files change while it runs.
A plain case folder, whose every file sits directly in it, is checked by the
signature its item already keeps for that last check (a ``stat`` a file, see
:func:`~pytest_recall.cases.model.folder_digests`); a case that reads files
elsewhere too (a group's, a workspace, an MCP file, a trap task's) by a
fingerprint of its content. So a plain case is hashed once, for its record,
not three times.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_recall.cases.model import Case, CaseError, folder_digests, plain_data


def fingerprint(case: Case) -> bytes:
    """Everything that decides a verdict (its content hash) and what a trap task adds (its judge's digest)."""
    blob = json.dumps([case.content_hash, plain_data(case.extra)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).digest()


def reads_only_its_folder(case: Case) -> bool:
    """Whether every file the case was read from sits directly in its folder, so their signature covers it."""
    return case.group is None and case.workspace is None and not case.mcp_servers and not case.extra


@dataclass(frozen=True, slots=True)
class ReadAgain:
    """A case read from its files again when it runs, refused unless they still hold the case collected.

    ``collected`` is the fingerprint of the case collected, unless ``folder``
    and its signature at collection (``on_disk``) are given: they decide then.
    """

    read: Callable[[], Case]
    collected: bytes
    folder: Path | None = None
    on_disk: Mapping[str, str] | None = None

    @classmethod
    def of(
        cls,
        read: Callable[[], Case],
        case: Case,
        *,
        folder: Path | None = None,
        on_disk: Mapping[str, str] | None = None,
    ) -> ReadAgain:
        if folder is not None and on_disk is not None and reads_only_its_folder(case):
            return cls(read, b"", folder, on_disk)
        return cls(read, fingerprint(case))

    def __call__(self) -> Case:
        __tracebackhide__ = True
        case = self.read()
        if self.folder is not None and self.on_disk is not None:
            # Signed after the read: a file changed before or while it was read no longer matches.
            same = reads_only_its_folder(case) and folder_digests(self.folder) == self.on_disk
        else:
            same = fingerprint(case) == self.collected
        if not same:
            raise CaseError(f"{case.source}: its files no longer hold the case collected")
        return case
