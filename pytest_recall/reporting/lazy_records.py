"""Records made or read one at a time: a report's ``cases`` that never sits in memory whole.

The report writers iterate ``cases`` once or twice and index it now and
then; at 100,000 cases, holding every record would cost gigabytes. Each
source (the spool, report files on disk, synthetic records for benches)
says how to get record ``i`` and how many there are; this base class makes
that a read-only :class:`~collections.abc.Sequence`, slices included.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar, overload

Record = TypeVar("Record", bound=Mapping[str, Any])


class LazyRecords(Sequence[Record]):
    """A sequence whose item ``i`` is :meth:`row` ``(i)``, a record's JSON row made when read; a slice is a list."""

    def __len__(self) -> int:
        raise NotImplementedError

    def row(self, index: int) -> Record:
        """The JSON row of record ``index``, from 0 to ``len(self) - 1``."""
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        size = len(self)
        if isinstance(index, slice):
            return [self.row(i) for i in range(*index.indices(size))]
        if not -size <= index < size:
            raise IndexError(index)
        return self.row(index % size)

    def __iter__(self) -> Iterator[Record]:
        return (self.row(i) for i in range(len(self)))
