"""The ``pytest-recall`` command: the work around a run that is not a run.

Each subcommand is a thin shell over a pure function elsewhere, so the same
logic serves the plugin, the command and the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

if TYPE_CHECKING:
    from pytest_recall.reporting import RunReport

Handler = Callable[[argparse.Namespace], int]
ALLOW_PROTOCOL_DIFF_HELP = {
    "merge": "merge reports whose protocol blocks differ (default: refused; shards of one run share one); "
    "the merged report keeps the first report's block",
    "compare": "give a verdict even across different data sets or scoring judges (default: refused when the "
    "protocol blocks' data differ, or the judge commands whose verdicts are the scores); the differing fields are "
    "listed either way",
}


class BadInput(Exception):
    """Input files that cannot be used; one line each."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _load_reports(paths: list[str], *, summaries: bool = False) -> list[RunReport]:
    """Every report, or :class:`BadInput` naming every one that is not, not only the first.

    With ``summaries``, each case is read one at a time and kept as its scalars only.
    """
    from pytest_recall.reporting import load_report, summarized_report

    reports, problems = [], []
    for path in paths:
        try:
            reports.append(summarized_report(Path(path)) if summaries else load_report(Path(path)))
        except (OSError, ValueError) as exc:
            problems.append(str(exc))
    if problems:
        raise BadInput(problems)
    return reports


@contextlib.contextmanager
def _rendering(path: str) -> Iterator[None]:
    """Where a report is shown: blocks the schema types loosely (``control``, ``judges``) may hold the wrong
    shapes in a report written by hand, which is one line naming the file, never a traceback."""
    try:
        yield
    except (TypeError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        shown = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise BadInput([f"{path}: not a pytest-recall report: a value of the wrong shape ({shown})"]) from None


def _merge(args: argparse.Namespace) -> int:
    """Exit by the merged verdict, as the run would have: 2 interrupted, else 1 by the gate, else 0."""
    from pytest_recall.reporting import (
        case_scalars,
        close_files,
        format_summary,
        merge_report_files,
        merged_exit_status,
        write_report,
    )

    try:
        paths = [Path(path) for path in args.reports]
        merged = merge_report_files(paths, threshold=args.threshold, allow_protocol_diff=args.allow_protocol_diff)
    except (OSError, ValueError) as exc:
        raise BadInput(str(exc).splitlines()) from None
    try:
        write_report(Path(args.output), merged)
        count = len(args.reports)
        print(f"merged {count} reports, {merged.n_total} cases: score {merged.score} -> {args.output}")
        print(format_summary(merged, case_scalars(merged))[0])
        return merged_exit_status(merged, args.gate)
    finally:
        close_files(merged)


def _report(args: argparse.Namespace) -> int:
    from pytest_recall.reporting import (
        case_scalars,
        close_files,
        format_summary,
        html_chunks,
        streamed_report,
        write_chunks_atomic,
    )

    try:
        # The page streams the cases from the file instead of holding them all.
        streamed = streamed_report(Path(args.report))
    except (OSError, ValueError) as exc:
        raise BadInput([str(exc)]) from None
    report = streamed if streamed is not None else _load_reports([args.report])[0]
    try:
        with _rendering(args.report):
            print("\n".join(format_summary(report, case_scalars(report))))
            if args.html:
                write_chunks_atomic(Path(args.html), html_chunks(report))
                print(f"  html: {args.html}")
        return 0
    finally:
        close_files(report)


def _compare(args: argparse.Namespace) -> int:
    """Exit 1 only for a significant drop, so CI can gate on "no regression" without chasing noise."""
    from pytest_recall.reporting import write_json_atomic
    from pytest_recall.reporting.compare import compare_reports, format_comparison, nothing_to_compare, refused_verdict

    # Streamed like merge: a case's scalars are all a comparison reads.
    base, new = _load_reports([args.base, args.new], summaries=True)
    result = compare_reports(base, new, alpha=args.alpha, seed=args.seed)
    refused = refused_verdict(result, base_name=args.base, new_name=args.new)
    if refused is not None and not args.allow_protocol_diff:
        shown, reason = refused
        print("\n".join(shown))
        raise BadInput([reason])
    why_not = nothing_to_compare(new, result, new_name=args.new)
    if why_not is not None:
        raise BadInput([why_not])
    print(format_comparison(result))
    if args.json:
        write_json_atomic(Path(args.json), result)
    return 1 if result["regression"] else 0


def _card(args: argparse.Namespace) -> int:
    from pytest_recall.reporting import summarized_report
    from pytest_recall.reporting.card import results_card

    try:
        report = summarized_report(Path(args.report))
    except (OSError, ValueError) as exc:
        raise BadInput([str(exc)]) from None
    with _rendering(args.report):
        card = results_card(report)
    sys.stdout.write(card)
    return 0


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, like 0.05, not {text!r}")
    return value


def _generate(args: argparse.Namespace) -> int:
    """Write a generated suite as case folders; the same arguments always give the same bytes."""
    from pytest_recall.cases import CaseError, write_case_folders
    from pytest_recall.suites import family_cases

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {out} is not an empty folder; choose a new one, so no stale case is left in it")
    if args.family == "ledger":
        settings: dict[str, object] = {"family": "ledger", "seed": args.seed, "count": args.count}
    elif args.family == "abilities":
        settings = {"family": "abilities", "seed": args.seed, "count": args.count, "version": args.version}
        settings["haystack_bytes"] = args.haystack_bytes
    elif args.family == "coding":
        settings = {"family": "coding", "seed": args.seed, "count": args.count, "version": args.version}
    else:
        settings = {"family": "audit", "split": args.split, "size": args.size, "version": args.version}
    try:
        # Every case is built before the first is written: a bad parameter leaves no half-written suite.
        cases = list(family_cases(settings, suite=out.name, source=args.family))
    except CaseError as exc:
        raise ValueError(str(exc)) from None
    write_case_folders(cases, out)
    print(f"wrote {len(cases)} {args.family} cases to {out}")
    return 0


def _import(args: argparse.Namespace) -> int:
    """A public benchmark's data file as a suite of case folders; nothing is written unless all of it is."""
    from pytest_recall.suites import IMPORTERS, MIN_CHARS_PER_STEP, Selection

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be 1 or more, not {args.limit}")
    if args.sessions_per_step < 1:
        raise ValueError(f"--sessions-per-step must be 1 or more, not {args.sessions_per_step}")
    if args.chars_per_step < MIN_CHARS_PER_STEP:
        raise ValueError(f"--chars-per-step must be {MIN_CHARS_PER_STEP} or more, not {args.chars_per_step}")
    selection = Selection(
        limit=args.limit,
        types=tuple(args.type or ()),
        ids=tuple(args.id or ()),
        seed=args.seed,
        sessions_per_step=args.sessions_per_step,
        chars_per_step=args.chars_per_step,
    )
    summary = IMPORTERS[args.benchmark](Path(args.file), Path(args.out), selection)
    if summary.questions == 0:
        print(f"pytest-recall import: no question matched the selection; {args.out} holds no case", file=sys.stderr)
    print(summary.line(args.benchmark))
    return 0


def _suite(args: argparse.Namespace) -> int:
    from pytest_recall.suites import bundled_suites, suite_path

    if args.list:
        suites = bundled_suites()
        width = max((len(name) for name in suites), default=0)
        for name, path in suites.items():
            print(f"{name:<{width}}  {path}")
        return 0
    if not args.names:
        raise ValueError("name a bundled suite, or pass --list to see them")
    # Every name is found before any folder is printed: under "$(...)", a partial list would still
    # hand pytest the folders found, and the error on stderr would scroll past unseen.
    folders = [suite_path(name) for name in args.names]
    for folder in folders:
        print(folder)
    return 0


def installed_version() -> str:
    """The version pip installed, which is what a bug report needs; a bare checkout falls back to the package's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-recall")
    except PackageNotFoundError:
        from pytest_recall import __version__

        return __version__


def _agents(args: argparse.Namespace) -> int:
    """What a user needs to wire each real CLI: the adapter, tested versions, memory, home copies, binds."""
    from pytest_recall.agents import all_adapters

    for adapter in all_adapters():
        print(f"{adapter.script}: {adapter.package}, tested with {adapter.tested}")
        rows = {
            "the CLI": f"${adapter.bin_variable}, else {adapter.cli} on PATH" if adapter.bin_variable else adapter.cli,
            "driven": adapter.driven,
            "memory": adapter.memory,
            "--recall-home-copy": adapter.home_copy,
            "--recall-sandbox-bind": adapter.sandbox_bind,
        }
        for label, value in rows.items():
            print(f"  {label:<22} {value}")
    return 0


def _fake_model(args: argparse.Namespace) -> int:
    """Serve until interrupted: a user's dry run of their wiring, with no tokens spent."""
    from pytest_recall.testing import FakeModelServer, RateLimitStretch

    limit = RateLimitStretch(args.rate_limit_after, args.rate_limit_for) if args.rate_limit_for > 0 else None
    server = FakeModelServer(args.mode, port=args.port, log_path=Path(args.log) if args.log else None, rate_limit=limit)
    print(f"fake model ({args.mode}) on {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


def _judge_audit(args: argparse.Namespace) -> int:
    """How a judge command takes answers made from a suite's gold; 1 when it falls for a gaming answer."""
    import json
    import shlex
    from concurrent.futures import ThreadPoolExecutor

    from pytest_recall.cases import CaseError
    from pytest_recall.reporting import counted
    from pytest_recall.scoring.judge_audit import (
        AuditItem,
        audit_items,
        audit_lines,
        audit_table,
        flagged,
        question_from,
    )
    from pytest_recall.sessions import run_judge_command
    from pytest_recall.suites import cases_under

    argv = shlex.split(args.judge_cmd)
    if not argv:
        raise ValueError("--judge-cmd is empty; give the judge command, e.g. --judge-cmd='recall-judge -m MODEL'")
    if not 0.0 <= args.gaming_bound <= 1.0:
        raise ValueError(f"--gaming-bound is a share of answers, from 0 to 1, not {args.gaming_bound}")
    if args.workers < 1:
        raise ValueError(f"--workers must be 1 or more, not {args.workers}")
    try:
        cases = list(cases_under(Path(args.suite)))
    except CaseError as exc:
        raise ValueError(str(exc)) from None
    questions = [
        question
        for case in cases
        if (question := question_from(case.expected, case.steps[-1].prompt, f"{case.suite}/{case.case_id}"))
    ][: args.limit]
    if not questions:
        raise ValueError(f"{args.suite} holds no case with a text answer to audit; point it at a suite folder")
    items = audit_items(questions)

    def score(item: AuditItem) -> float | None:
        return run_judge_command(argv, item.request(), timeout_s=args.timeout).reply.score

    with ThreadPoolExecutor(max_workers=args.workers, thread_name_prefix="recall-judge-audit") as pool:
        table = audit_table(list(zip(items, pool.map(score, items), strict=True)), bound=args.gaming_bound)
    print(f"judge-audit: {shlex.join(argv)} on {counted(len(questions), 'question')} of {args.suite}")
    print("\n".join(audit_lines(table, args.gaming_bound)))
    if args.json:
        document = {"judge": args.judge_cmd, "bound": args.gaming_bound, "flagged": flagged(table), "table": table}
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n", "utf-8")
    return 1 if flagged(table) else 0


def _rejudge(args: argparse.Namespace) -> int:
    """A run's kept answers re-judged by each judge command, no agent started: the judges table, and -o the verdicts."""
    from pytest_recall.agents import missing_line, not_kept, parse_judges, rejudge_report
    from pytest_recall.reporting import write_json_atomic
    from pytest_recall.scoring import format_panel

    judges = parse_judges(args.judge_cmd)
    if args.judge_samples < 1:
        raise BadInput([f"--judge-samples is {args.judge_samples}; ask each judge at least once: --judge-samples=1"])
    report = _load_reports([args.report])[0]
    total = len(report.cases)
    if len(unjudgeable := not_kept(report)) == total:
        raise BadInput(
            [missing_line(unjudgeable, total, report.run_mode) or f"{args.report} holds no case to re-judge"]
        )
    result = rejudge_report(
        report, judges, timeout_s=args.timeout, retries=args.retries, workers=args.workers, samples=args.judge_samples
    )
    sampled = f", {args.judge_samples} samples each (the majority; a tie fails)" if args.judge_samples > 1 else ""
    print(f"rejudge: {total - len(result['not_kept'])} answers of {args.report} by {len(judges)} judges{sampled}")
    print("\n".join(format_panel(result["table"])))
    missing = missing_line(result["not_kept"], total, report.run_mode)
    if missing is not None:
        print(f"  {missing}")
    if args.output:
        write_json_atomic(Path(args.output), {"report": args.report, **result})
        print(f"  verdicts: {args.output}")
    return 0


def _add_rejudge(commands: Any) -> None:
    command = commands.add_parser(
        "rejudge",
        help="re-judge a report's kept answers with one or more judge commands, no agent started: "
        "how much does the score depend on the judge?",
    )
    command.add_argument("report", help="a report file (report.json) of a run, merged or not")
    command.add_argument(
        "--judge-cmd",
        action="append",
        required=True,
        metavar="[NAME=]CMD",
        help="a judge command, as for --recall-judge-cmd; give it once per judge, named NAME=CMD or by position",
    )
    command.add_argument("-o", "--output", metavar="PATH", help="write every judge's verdicts and the table here")
    command.add_argument("--timeout", type=float, default=120.0, help="seconds per verdict (default 120)")
    command.add_argument("--retries", type=int, default=0, help="times a judge error is asked again (default 0)")
    command.add_argument("--workers", type=int, default=2, help="verdicts asked at once per judge (default 2)")
    command.add_argument(
        "--judge-samples",
        type=int,
        default=1,
        metavar="K",
        help="ask each judge K times per answer and take the majority (a tie fails); the table gives each judge's "
        "flip rate, the share of answers its samples disagree on (default 1)",
    )
    command.set_defaults(handler=_rejudge)


def _add_judge_audit(commands: Any) -> None:
    from pytest_recall.scoring.judge_audit import GAMING_BOUND

    audit = commands.add_parser(
        "judge-audit",
        help="how lenient a judge command is: does it accept vague, partial, wrong or gaming answers made from a "
        "suite, and the gold reformatted? Exit 1 when it accepts a gaming answer above --gaming-bound",
    )
    audit.add_argument("suite", help="a suite folder (case folders or a suite.toml), e.g. from pytest-recall suite")
    audit.add_argument("--judge-cmd", required=True, help="the judge command, as for --recall-judge-cmd")
    audit.add_argument("--limit", type=int, default=50, help="questions to audit (default 50; nine answers each)")
    audit.add_argument("--timeout", type=float, default=120.0, help="seconds per verdict (default 120)")
    audit.add_argument("--workers", type=int, default=2, help="verdicts asked at once (default 2)")
    audit.add_argument(
        "--gaming-bound",
        type=float,
        default=GAMING_BOUND,
        metavar="RATE",
        help=f"the share of a gaming answer (shotgun, negated, claims_correct, hedge) a judge may accept before it "
        f"is flagged and the command exits 1 (default {GAMING_BOUND})",
    )
    audit.add_argument("--json", metavar="PATH", help="also write the table, the bound and the flagged variants here")
    audit.set_defaults(handler=_judge_audit)


def build_parser() -> argparse.ArgumentParser:
    from pytest_recall.testing import MODES

    parser = argparse.ArgumentParser(
        prog="pytest-recall",
        description="Tools around pytest-recall runs.",
        epilog="Exit status: 0 when the command did its work; 1 when what it gates on failed (merge: the cases or "
        "the score, compare: a significant regression, judge-audit: a gaming answer accepted above the bound); 2 on "
        "unreadable input, a usage error or, for merge, an interrupted shard.",
    )
    parser.add_argument("--version", action="version", version=f"pytest-recall {installed_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_report_commands(commands)
    _add_generate_command(commands)
    _add_import_command(commands)

    suite = commands.add_parser("suite", help="print the folder of a bundled suite, to hand to pytest")
    suite.add_argument("names", nargs="*", metavar="NAME", help="bundled suite names; one folder printed per line")
    suite.add_argument("--list", action="store_true", help="list the bundled suites and their folders")
    suite.set_defaults(handler=_suite)

    agents = commands.add_parser("agents", help="list the adapters for real agent CLIs and how to wire each")
    agents.set_defaults(handler=_agents)

    fake = commands.add_parser("fake-model", help="serve a fake model on 127.0.0.1 to dry-run an agent CLI's wiring")
    fake.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one, printed)")
    fake.add_argument(
        "--mode",
        default="memory",
        choices=MODES,
        help="as an agent's model, what it remembers: 'plain' nothing, 'memory' (default) a note in the CLI's own "
        "memory file, 'native' Claude Code's auto-memory, 'lenient', 'gullible' and 'fickle' nothing, as plain; as a "
        "judge (recall-judge), every mode judges strictly except 'lenient', which accepts any answer that does not "
        "decline, 'gullible', which accepts any answer holding the gold's text or claiming to be correct, and "
        "'fickle', which turns a verdict over on a seeded coin each time the same prompt is asked again "
        "(for --judge-samples)",
    )
    fake.add_argument("--log", metavar="FILE", help="append every request and its reply here as JSON lines")
    fake.add_argument(
        "--rate-limit-after", type=int, default=0, metavar="N", help="with --rate-limit-for: requests answered first"
    )
    fake.add_argument(
        "--rate-limit-for",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="answer HTTP 429 with a Retry-After header to every request for this long, after --rate-limit-after "
        "requests: a provider's rate limit, to try a harness's backoff on",
    )
    fake.set_defaults(handler=_fake_model)
    _add_judge_audit(commands)
    _add_rejudge(commands)
    return parser


def _add_report_commands(commands: Any) -> None:
    """``merge``, ``report`` and ``compare``: what works on saved reports."""
    from pytest_recall.reporting import Gate

    merge = commands.add_parser("merge", help="merge shard reports into one, recomputing every aggregate")
    merge.add_argument("reports", nargs="+", help="report JSON files written by --recall-report")
    merge.add_argument("-o", "--output", required=True, help="where to write the merged report")
    merge.add_argument("--threshold", type=float, default=None, help="pass mark (default: the reports' own)")
    merge.add_argument(
        "--gate",
        choices=get_args(Gate),
        default="cases",
        help="what the exit status follows, as --recall-gate: 'cases' (default) exits 1 on any failed or errored "
        "case, 'score' exits 1 only when the merged score misses the threshold; an interrupted shard exits 2",
    )
    merge.add_argument("--allow-protocol-diff", action="store_true", help=ALLOW_PROTOCOL_DIFF_HELP["merge"])
    merge.set_defaults(handler=_merge)

    report = commands.add_parser("report", help="print a saved report's summary, and rebuild its HTML page")
    report.add_argument("report", help="a report JSON file written by --recall-report (or merge)")
    report.add_argument("--html", metavar="PATH", help="write the self-contained HTML page here")
    report.set_defaults(handler=_report)

    compare = commands.add_parser(
        "compare",
        help="compare two reports case by case; exit 1 on a significant regression, 2 on unreadable input, 0 otherwise",
        description="Pairs cases by suite and id, tests new - base overall and per category, and exits 1 only "
        "when the overall drop is significant (2 on unreadable input).",
    )
    compare.add_argument("base", help="the report to compare against, e.g. from the main branch")
    compare.add_argument("new", help="the report of the change under test")
    compare.add_argument("--alpha", type=_alpha, default=0.05, help="significance level (default 0.05)")
    compare.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    compare.add_argument("--json", metavar="PATH", help="also write the comparison as JSON here")
    compare.add_argument("--allow-protocol-diff", action="store_true", help=ALLOW_PROTOCOL_DIFF_HELP["compare"])
    compare.set_defaults(handler=_compare)

    card = commands.add_parser(
        "card",
        help="print a saved report as a Markdown results card (score, interval, categories, lift, cost, protocol)",
    )
    card.add_argument("report", help="a report JSON file written by --recall-report (or merge)")
    card.set_defaults(handler=_card)


def _add_generate_command(commands: Any) -> None:
    """``generate FAMILY``: one subcommand per generated family, each writing case folders."""
    generate = commands.add_parser("generate", help="write a generated suite as case folders")
    families = generate.add_subparsers(dest="family", required=True, metavar="FAMILY")
    ledger = families.add_parser("ledger", help="ledger cases in the session-memory-recall format")
    ledger.add_argument("--seed", type=int, required=True, help="any whole number; the same seed, the same cases")
    ledger.add_argument("--count", type=int, required=True, help="how many cases (1 to 10000)")
    audit = families.add_parser("audit", help="audit-trail cases of the agent-supermemory suite")
    audit.add_argument("--split", required=True, help="train or eval: disjoint seeds, the same eight families")
    audit.add_argument("--size", type=int, required=True, help="how many cases (1 to 256)")
    audit.add_argument(
        "--version", type=int, default=3, help="3 (default): the latest suite; 1 or 2: an earlier one, unchanged"
    )
    abilities = families.add_parser("abilities", help="multi-session ledger cases in seven memory categories")
    abilities.add_argument("--seed", type=int, required=True, help="any whole number; the same seed, the same cases")
    abilities.add_argument("--count", type=int, required=True, help="how many cases (1 or more; categories rotate)")
    abilities.add_argument(
        "--haystack-bytes",
        type=int,
        default=60_000,
        help="size of a long_haystack step (default 60000; above 100000 it needs --recall-prompt=stdin or file)",
    )
    coding = families.add_parser("coding", help="coding cases with a workspace, judged on the files the agent leaves")
    coding.add_argument("--seed", type=int, required=True, help="any whole number; the same seed, the same cases")
    coding.add_argument("--count", type=int, required=True, help="how many cases (1 or more; categories rotate)")
    for versioned in (abilities, coding):
        versioned.add_argument(
            "--version", type=int, default=2, help="2 (default): the latest suite; 1: the first suite, unchanged"
        )
    for family in (ledger, audit, abilities, coding):
        family.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder for the case folders")
        family.set_defaults(handler=_generate)


# The benchmarks ``import`` reads: (name, what FILE is, what --type/--category selects, that flag's name).
_IMPORT_SOURCES = (
    ("longmemeval", "longmemeval_s.json, longmemeval_m.json or longmemeval_oracle.json", "question type", "--type"),
    ("locomo", "locomo10.json", "category (1-5 or its name, e.g. multi-hop)", "--category"),
    (
        "beam",
        "a BEAM conversation folder (chats/100K/1), a folder of them (chats/10M), or a hub split as JSON Lines",
        "ability (e.g. event_ordering)",
        "--ability",
    ),
    (
        "memoryagentbench",
        "a MemoryAgentBench split as JSON Lines or a JSON array (e.g. Conflict_Resolution.jsonl)",
        "competency (e.g. Conflict_Resolution) or sub-dataset (e.g. eventqa_full)",
        "--type",
    ),
)
# The long haystacks, whose ingest steps are cut by characters rather than by sessions.
_CHAR_BUDGETED = ("beam", "memoryagentbench")


def _add_import_command(commands: Any) -> None:
    """``import BENCHMARK FILE``: a public benchmark's data file as a suite of case folders."""
    importer = commands.add_parser(
        "import",
        help="turn a LongMemEval, LoCoMo, BEAM or MemoryAgentBench data file into a suite of case folders",
        description="Reads the file one record at a time; a malformed record stops the import with one line "
        "naming the record and the field, and nothing is written. import.json beside the cases records the "
        "files' SHA-256 and the options. See docs/public-benchmarks.md.",
    )
    benchmarks = importer.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for name, what, kinds, flag in _IMPORT_SOURCES:
        one = benchmarks.add_parser(name, help=f"import {what}")
        one.add_argument("file", metavar="FILE", help=f"the data ({what})")
        one.add_argument(
            "--out",
            required=True,
            metavar="DIR",
            help="a new or empty folder for the suite (a link to one is followed); one holding this same import "
            "is left as it is",
        )
        one.add_argument("--limit", type=int, default=None, help="import at most this many questions")
        one.add_argument(
            flag,
            dest="type",
            action="append",
            metavar=flag.strip("-").upper(),
            help=f"only questions of this {kinds}; repeat for several",
        )
        one.add_argument("--id", action="append", metavar="ID", help="only this question (or conversation) id; repeat")
        one.add_argument(
            "--seed",
            type=int,
            default=None,
            help="with --limit, a random sample drawn with this seed (default: the first)",
        )
        _add_step_size(one, name)
        one.set_defaults(handler=_import)


def _add_step_size(parser: Any, benchmark: str) -> None:
    """How much haystack one ingest step tells: whole sessions, or for the long haystacks a character budget."""
    if benchmark in _CHAR_BUDGETED:
        parser.set_defaults(sessions_per_step=1)
        parser.add_argument(
            "--chars-per-step",
            type=int,
            default=60_000,
            metavar="N",
            help="the most characters of conversation one ingest step tells (default 60000, about 15k tokens); "
            "a 10M-token conversation is never put into one prompt",
        )
        return
    parser.set_defaults(chars_per_step=60_000)
    parser.add_argument(
        "--sessions-per-step",
        type=int,
        default=1,
        metavar="N",
        help="haystack sessions told per step: 1 (default) is one fresh process per session, the faithful feed; "
        "more costs fewer sessions and remembers less like a user would",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except BadInput as bad:
        for line in bad.lines:
            print(f"pytest-recall {args.command}: {line}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"pytest-recall {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
