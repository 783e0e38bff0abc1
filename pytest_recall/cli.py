"""The ``pytest-recall`` command: the work around a run that is not a run.

Each subcommand is a thin shell over a pure function elsewhere, so the same
logic serves the plugin, the command and the tests.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

Handler = Callable[[argparse.Namespace], int]


def _merge(args: argparse.Namespace) -> int:
    from pytest_recall.merge import merge_reports
    from pytest_recall.report import load_report, write_json_atomic

    reports = [load_report(Path(path)) for path in args.reports]
    merged = merge_reports(reports, threshold=args.threshold)
    write_json_atomic(Path(args.output), merged)
    print(f"merged {len(reports)} reports, {merged['n_total']} cases: score {merged['score']} -> {args.output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-recall", description="Tools around pytest-recall runs.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    merge = commands.add_parser("merge", help="merge shard reports into one, recomputing every aggregate")
    merge.add_argument("reports", nargs="+", help="report JSON files written by --recall-report")
    merge.add_argument("-o", "--output", required=True, help="where to write the merged report")
    merge.add_argument("--threshold", type=float, default=None, help="pass mark (default: the reports' own)")
    merge.set_defaults(handler=_merge)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except (OSError, ValueError) as exc:
        print(f"pytest-recall {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
