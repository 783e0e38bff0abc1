"""Builds the :class:`~pytest_recall.plugin.config.RunConfig` once, at configure time, from pytest's options.

One reader per group; each value is checked as it is read, and the checks
that need several groups (or the disk) run before the config is returned,
so a value the run uses only later is still refused at start-up.
A live preset is a layer under the flags: it fills the command (unless
``--recall-cmd`` gives one), the session mode, the turn protocol and the
exit codes, and a protocol flag given as well wins over the preset's value.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.agents import PRESETS, LivePreset, preset_conflict
from pytest_recall.cases import (
    CaseError,
    McpConfigError,
    ProtocolError,
    decode_escapes,
    layer_protocol,
    parse_exit_codes,
    parse_positive_seconds,
    protocol_fields,
    read_mcp_config,
)
from pytest_recall.plugin.checks import check_mcp_servers, check_suite_scope, check_writable, resolve_command_paths
from pytest_recall.plugin.config import EpochChoice, Outputs, RunConfig, ScaleOut
from pytest_recall.plugin.option_model import flag_of
from pytest_recall.plugin.parsing import OptionReader, parse_env, parse_home_copy
from pytest_recall.plugin.stop import STOP_NEEDS_SCORE_GATE
from pytest_recall.plugin.xdist_handoff import SHARD_INPUT, TRANSCRIPTS_INPUT, handed, is_worker
from pytest_recall.reporting import AUTO, ShardError, parse_shard, shard_from_environment
from pytest_recall.sessions import (
    AgentCommand,
    Isolation,
    Judge,
    LiveSettings,
    LlmJudgeSettings,
    SandboxSettings,
    SessionLimits,
    parse_judges,
)

# The live-protocol flags, by their case.toml names, in the order a record lists them.
PROTOCOL_FLAGS = ("turn_template", "paste", "quit", "ready_pattern", "answer_pattern", "ready_idle")
# Regular expressions keep their backslashes; the other protocol values understand escapes.
_PATTERN_FLAGS = ("ready_pattern", "answer_pattern")


def read_run_config(config: pytest.Config) -> RunConfig:
    """Every ``--recall-*`` option of this run, read and checked; a bad one is one usage line."""
    __tracebackhide__ = True
    read = OptionReader(config)
    preset = read_preset(read)
    run = RunConfig(
        command=read_command(read, preset),
        limits=read_limits(read),
        isolation=read_isolation(read),
        sandbox=read_sandbox(read),
        live=read_live(read, preset),
        scale_out=read_scale_out(read),
        outputs=read_outputs(read),
        llm_judge=read_llm_judge(read),
        preflight=read.switch("recall_preflight"),
    )
    check_suite_scope(config, run)
    if run.scale_out.stop == "decided" and run.outputs.gate != "score":
        raise pytest.UsageError(STOP_NEEDS_SCORE_GATE)
    here = Path(config.invocation_params.dir)
    outputs = run.outputs
    written = (
        ("--recall-report", outputs.report_path),
        ("--recall-log", outputs.log_path),
        ("--recall-html", outputs.html_path),
    )
    notes = tuple(note for flag, path in written if (note := check_writable(flag, path, here)) is not None)
    return dataclasses.replace(run, outputs=dataclasses.replace(outputs, created_outside=notes))


def read_preset(read: OptionReader) -> LivePreset | None:
    __tracebackhide__ = True
    name = read.choice("recall_live_preset")
    return None if name is None else PRESETS[name]


def read_command(read: OptionReader, preset: LivePreset | None) -> AgentCommand:
    __tracebackhide__ = True
    text = read.text("recall_cmd")
    if text is None and preset is not None:
        text = shlex.join(preset.command)
    argv, resolved = resolve_command_paths(split_command(text, "--recall-cmd", "the command that starts your agent"))
    if preset is not None and text is not None and (conflict := preset_conflict(preset, text, argv)):
        raise pytest.UsageError(conflict)
    return AgentCommand(text=text, argv=argv, prompt=read.choice("recall_prompt"), resolved_paths=resolved)


def split_command(text: str | None, flag: str, what: str) -> tuple[str, ...]:
    """A command given as text, in words as a shell splits it; unsplittable or empty, one usage line."""
    __tracebackhide__ = True
    try:
        argv = tuple(shlex.split(text)) if text else ()
    except ValueError as exc:
        raise pytest.UsageError(f"{flag} cannot be split like a shell command line: {exc}") from None
    if text is not None and not argv:
        raise pytest.UsageError(f"{flag} is empty: give {what}")
    return argv


def read_limits(read: OptionReader) -> SessionLimits:
    __tracebackhide__ = True
    return SessionLimits(
        timeout_s=read.optional_seconds("recall_timeout"),
        grace_s=read.seconds("recall_grace"),
        max_output_bytes=read.whole("recall_max_output", minimum=1024),
    )


def read_isolation(read: OptionReader) -> Isolation:
    __tracebackhide__ = True
    home = read.choice("recall_home")
    return Isolation(
        home=home,
        home_copy=parse_home_copy(read.text("recall_home_copy"), home),
        env=parse_env(read.lines("recall_env")),
        workdir=read.choice("recall_workdir"),
        scope=read.choice("recall_scope"),
        mcp_servers=read_mcp(read),
    )


def read_mcp(read: OptionReader) -> Mapping[str, Any] | None:
    """``--recall-mcp``: read and checked now, not in every case."""
    __tracebackhide__ = True
    path = read.path("recall_mcp")
    if path is None:
        return None
    try:
        servers = read_mcp_config(path, "--recall-mcp")
    except McpConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not is_worker(read.config):
        check_mcp_servers(servers, path)  # a worker (maybe on another host) takes the controller's word
    return servers


def read_sandbox(read: OptionReader) -> SandboxSettings:
    """``--recall-sandbox`` and its binds; whether bwrap works here is :func:`~.sandbox_setup.check_sandbox`'s."""
    __tracebackhide__ = True
    mode = read.choice("recall_sandbox")
    binds = read.paths("recall_sandbox_bind")
    for bind in binds:
        if mode != "none" and not bind.exists():
            raise pytest.UsageError(f"--recall-sandbox-bind: {bind} does not exist; fix the path or drop it")
    return SandboxSettings(mode=mode, binds=binds, network=read.choice("recall_sandbox_net"))


def read_live(read: OptionReader, preset: LivePreset | None) -> LiveSettings:
    """The run-wide session mode and turn protocol: a preset's values, then the flags over them."""
    __tracebackhide__ = True
    session = read.choice("recall_session")
    try:
        flags = _protocol_flags(read)
        codes = read.text("recall_ok_exit_codes")
        ok_exit_codes = parse_exit_codes(codes, "--recall-ok-exit-codes") if codes is not None else None
    except (CaseError, ProtocolError) as exc:
        raise pytest.UsageError(str(exc)) from None
    if preset is None:
        return LiveSettings(session=session, protocol=flags, ok_exit_codes=ok_exit_codes)
    if ok_exit_codes is None and preset.ok_exit_codes != (0,):
        ok_exit_codes = preset.ok_exit_codes
    return LiveSettings(
        session=session or "continue",
        protocol=layer_protocol(_preset_protocol(preset), flags),
        preset=preset.name,
        ok_exit_codes=ok_exit_codes,
    )


def _protocol_flags(read: OptionReader) -> dict[str, Any]:
    """The turn-protocol fields the flags give, checked as a case.toml's are, in :data:`PROTOCOL_FLAGS` order."""
    fields: dict[str, Any] = {}
    for key in PROTOCOL_FLAGS:
        name = f"recall_{key}"
        value = read.text(name)
        if value is None:
            continue
        if key == "ready_idle":
            fields["ready_idle_s"] = parse_positive_seconds(value, f"{flag_of(name)}: {key}")
        else:
            given = value if key in _PATTERN_FLAGS else decode_escapes(value)
            fields.update(protocol_fields({key: given}, flag_of(name)))
    return fields


def _preset_protocol(preset: LivePreset) -> dict[str, Any]:
    """The fields a preset's protocol sets to other than the default, in field order."""
    protocol = preset.protocol
    return {
        field.name: getattr(protocol, field.name)
        for field in dataclasses.fields(protocol)
        if getattr(protocol, field.name) != field.default
    }


def read_scale_out(read: OptionReader) -> ScaleOut:
    __tracebackhide__ = True
    durations = read.path("recall_shard_durations")
    if durations is not None and not durations.is_file():
        raise pytest.UsageError(f"--recall-shard-durations: {durations} is not a file; give a report or run log")
    epochs = read.whole("recall_epochs", minimum=1)
    return ScaleOut(
        concurrency=read.whole("recall_concurrency", minimum=1),
        epochs=epochs,
        epochs_from=_epoch_choice(read.path("recall_epochs_from"), epochs, _ci_width(read)),
        control=read.switch("recall_control"),
        retries=read.whole("recall_retries", minimum=0),
        retry_delay_s=read.seconds("recall_retry_delay", zero_ok=True),
        rate_limit_attempts=read.whole("recall_rate_limit_attempts", minimum=1),
        max_cost_usd=read.dollars("recall_max_cost"),
        shard=_shard(read),
        shard_durations_path=durations,
        resume_path=read.path("recall_resume"),
        stop=read.choice("recall_stop"),
    )


def _ci_width(read: OptionReader) -> float | None:
    """--recall-ci-width: the score's interval half-width to plan repeats for, above 0 and below 1/2; None unset."""
    __tracebackhide__ = True
    if not read.text("recall_ci_width"):
        return None
    width = read.fraction("recall_ci_width")
    if not 0.0 < width < 0.5:
        raise pytest.UsageError(f"--recall-ci-width must be a half-width above 0 and below 0.5, not {width:g}")
    return width


def _epoch_choice(path: Path | None, epochs: int, ci_width: float | None) -> EpochChoice | None:
    """The earlier report whose epochs found the cases stable that this run's --recall-epochs leaves at one, and
    with --recall-ci-width how many runs each case gets (--recall-epochs the cap), refused here when out of reach."""
    __tracebackhide__ = True
    if path is None:
        if ci_width is not None:
            raise pytest.UsageError(
                "--recall-ci-width plans repeats from an earlier run: give --recall-epochs-from=REPORT and "
                "--recall-epochs=N (the cap) too"
            )
        return None
    if epochs < 2:
        raise pytest.UsageError("--recall-epochs-from chooses which cases repeat: give --recall-epochs=N above 1 too")
    from pytest_recall.reporting import load_report
    from pytest_recall.reporting.epoch_selection import baseline_scores, settled_cases
    from pytest_recall.scoring import plan_repeats

    try:
        sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        report = load_report(path)
        settled = settled_cases(report)
    except OSError as exc:
        raise pytest.UsageError(f"--recall-epochs-from: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise pytest.UsageError(f"--recall-epochs-from: {exc}; give the report of an earlier run") from None
    if (report.epochs or 1) < 2:
        raise pytest.UsageError(
            f"--recall-epochs-from: {path} ran each case once, so it settles no case: "
            "give the report of a run with --recall-epochs=N above 1"
        )
    if ci_width is None:
        return EpochChoice(path, sha256, settled)
    try:
        plan = plan_repeats(baseline_scores(report), width=ci_width, cap=epochs)
    except ValueError as exc:
        raise pytest.UsageError(f"--recall-ci-width={ci_width:g} with --recall-epochs-from={path}: {exc}") from None
    return EpochChoice(path, sha256, settled, ci_width, plan)


def _shard(read: OptionReader) -> tuple[int, int] | None:
    __tracebackhide__ = True
    text = read.text("recall_shard")
    # An xdist worker (on another machine, maybe) takes the controller's reading of the environment.
    given = handed(read.config, SHARD_INPUT)
    try:
        if text is not None and text.strip() == AUTO:
            return (int(given[0]), int(given[1])) if given else shard_from_environment(os.environ)
        return parse_shard(text) if text else None
    except ShardError as exc:
        raise pytest.UsageError(str(exc)) from None


def read_outputs(read: OptionReader) -> Outputs:
    __tracebackhide__ = True
    report = read.text("recall_report")
    transcripts = read.choice("recall_transcripts")
    return Outputs(
        threshold=read.fraction("recall_threshold"),
        gate=read.choice("recall_gate"),
        report_path=Path(os.path.abspath(report)) if report else None,
        html_path=read.path("recall_html"),
        log_path=read.path("recall_log"),
        transcripts=handed(read.config, TRANSCRIPTS_INPUT) or transcripts,
        estimate_from=read.path("recall_estimate_from"),
        answer_judge=read.choice("recall_answer_judge"),
    )


def read_llm_judge(read: OptionReader) -> LlmJudgeSettings:
    """``--recall-judge-cmd`` (once or more) and its companions; a flag that needs a judge and lacks it, a bad
    ``NAME=CMD`` or an unknown ``--recall-judge-score`` is one usage line."""
    __tracebackhide__ = True
    judges = read_judges(read)
    both, free_form = read.switch("recall_judge_both"), read.choice("recall_free_form_judge")
    if not judges and (both or free_form == "llm"):
        given = "--recall-judge-both" if both else "--recall-free-form-judge=llm"
        raise pytest.UsageError(f"{given} needs a judge: add --recall-judge-cmd='recall-judge -m MODEL' (or your own)")
    scoring = _scoring_judge(judges, read.text("recall_judge_score"))
    samples = read.whole("recall_judge_samples", minimum=1)
    if scoring is None:
        if samples > 1:
            raise pytest.UsageError(
                "--recall-judge-samples asks a judge command several times: add --recall-judge-cmd='recall-judge -m "
                "MODEL' (or your own)"
            )
        return LlmJudgeSettings(both=both, free_form=free_form, timeout_s=read.seconds("recall_judge_timeout"))
    return LlmJudgeSettings(
        text=scoring.text,
        argv=scoring.argv,
        both=both,
        free_form=free_form,
        timeout_s=read.seconds("recall_judge_timeout"),
        name=scoring.name,
        panel=tuple(judges) if len(judges) > 1 else (),
        samples=samples,
    )


def read_judges(read: OptionReader) -> list[Judge]:
    """Each ``--recall-judge-cmd`` (or line of its ini twin) as a judge, its command's paths resolved.
    One command given unnamed keeps its whole text as the command, as before several judges were."""
    __tracebackhide__ = True
    given = read.config.getoption("recall_judge_cmd")
    texts = [str(text).strip() for text in given] if given else read.lines("recall_judge_cmd")
    try:
        judges = parse_judges(texts, "--recall-judge-cmd")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return [dataclasses.replace(judge, argv=resolve_command_paths(judge.argv)[0]) for judge in judges]


def _scoring_judge(judges: list[Judge], score_by: str | None) -> Judge | None:
    """The judge whose verdict is the score: the one ``--recall-judge-score`` names, else the first given."""
    __tracebackhide__ = True
    if score_by is None:
        return judges[0] if judges else None
    named = {judge.name: judge for judge in judges}
    if score_by not in named:
        known = ", ".join(named) or "none: add --recall-judge-cmd=NAME=CMD"
        raise pytest.UsageError(f"--recall-judge-score={score_by} names no judge; the judges are {known}")
    return named[score_by]
