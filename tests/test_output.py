"""Output capture: terminal noise is cleaned away, and a flood keeps its head and tail."""

from __future__ import annotations

import pytest

from pytest_recall.sessions.capture import TRUNCATION_MARK, HeadTailBuffer
from pytest_recall.terminal_text import clean_terminal_text, decode


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31m27436.42\x1b[0m", "27436.42"),
        ("\x1b[1;38;5;208mbold orange\x1b[m", "bold orange"),
        ("\x1b[38;2;10;20;30mtruecolour\x1b[39m", "truecolour"),
        ("\x1b[2J\x1b[H\x1b[10;20Hmoved", "moved"),
        ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
        ("\x1b[3A\x1b[2K\x1b[Gline", "line"),
        ("\x1b]0;my title\x07answer", "answer"),
        ("\x1b]2;title\x1b\\answer", "answer"),
        ("\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("\x1bPdevice control\x1b\\text", "text"),
        ("\x1b(Bcharset", "charset"),
        ("\x1b7saved\x1b8", "saved"),
        ("\x1b=keypad\x1b>", "keypad"),
    ],
)
def test_escape_sequences_are_removed(raw, shown):
    assert clean_terminal_text(raw) == shown


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("| working\r/ working\r- working\r27436.42\n", "27436.42\n"),
        ("Working... 10%\rWorking... 100%\r\x1b[K27436.42", "27436.42"),
        ("progress\r\r\n27436.42", "progress\n27436.42"),
        ("spinner\r\x1b[2K\rdone\n", "done\n"),
        ("line one\r\nline two\r\n", "line one\nline two\n"),
        ("a\r\r\nb", "a\nb"),
        ("trailing rewrite to nothing\r", "trailing rewrite to nothing"),
    ],
)
def test_carriage_returns_keep_what_the_screen_finally_shows(raw, shown):
    assert clean_terminal_text(raw) == shown


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("2743X\b6.42", "27436.42"),
        ("abc\b\b\bxyz", "xyz"),
        ("ok\b\b\b\bgo", "go"),
        ("\bstart", "start"),
    ],
)
def test_backspaces_erase_the_character_before_them(raw, shown):
    assert clean_terminal_text(raw) == shown


def test_nuls_bells_and_other_controls_are_dropped_but_tabs_and_newlines_stay():
    assert clean_terminal_text("a\x00b\x07c\x0b\x0c\x7fd\te\n") == "abcd\te\n"


def test_invalid_utf8_decodes_to_replacement_characters():
    text = decode(b"caf\xc3\xa9 \xff\xfe 27436.42 \xe2\x82")
    assert text == "café \ufffd\ufffd 27436.42 \ufffd"
    assert clean_terminal_text(text).endswith("27436.42 \ufffd")


def test_plain_text_passes_through_unchanged():
    text = "Ledger — résumé 第二\n\tindented\n27436.42\n"
    assert clean_terminal_text(text) == text


def test_buffer_below_the_limit_keeps_everything():
    buffer = HeadTailBuffer(1024)
    for chunk in (b"abc", b"", b"def\n"):
        buffer.feed(chunk)
    assert (buffer.getvalue(), buffer.total, buffer.truncated) == (b"abcdef\n", 7, False)


def test_buffer_exactly_at_the_limit_is_not_truncated():
    buffer = HeadTailBuffer(1024)
    buffer.feed(b"x" * 1024)
    assert (len(buffer.getvalue()), buffer.truncated) == (1024, False)


@pytest.mark.parametrize("chunk_size", [1, 7, 100, 4096, 1 << 20])
def test_buffer_keeps_head_and_tail_and_counts_what_it_skipped(chunk_size):
    limit = 1024
    data = b"".join(b"line %06d\n" % n for n in range(20_000))
    buffer = HeadTailBuffer(limit)
    for start in range(0, len(data), chunk_size):
        buffer.feed(data[start : start + chunk_size])
    value = buffer.getvalue()
    head_limit = int(limit * 0.125)
    tail_limit = limit - head_limit
    skipped = len(data) - head_limit - tail_limit
    assert buffer.total == len(data)
    assert buffer.truncated
    assert value == data[:head_limit] + TRUNCATION_MARK.format(skipped=skipped).encode() + data[-tail_limit:]
    assert value.endswith(b"line 019999\n")


def test_buffer_memory_stays_bounded_while_streaming():
    buffer = HeadTailBuffer(1024)
    for _ in range(10_000):
        buffer.feed(b"y" * 512)
    assert len(buffer.getvalue()) < 1024 + 100
    assert buffer.total == 512 * 10_000
