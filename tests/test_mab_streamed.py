"""MemoryAgentBench's ``context`` read in pieces: the string decoder against ``json.loads``, the import unchanged.

The golden manifest (``data/memoryagentbench_streamed_golden.json``) holds the SHA-256 of every file the import wrote
for the rows below before the context was streamed, when each row's context was held whole.
"""

from __future__ import annotations

import hashlib
import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from pytest_recall.cli import main
from pytest_recall.suites import json_stream
from pytest_recall.suites.json_stream import StreamError, iter_rows

GOLDEN = Path(__file__).resolve().parent / "data" / "memoryagentbench_streamed_golden.json"
# Characters a context line is made of: the ones JSON escapes, surrogate pairs, Unicode whitespace, CR and tabs.
ALPHABET = ["a", "b", " ", " ", "\t", "\r", "\\", '"', "/", "é", "中", "😀", "\U0001f9e0", "\u2028", "\u00a0"]
ALPHABET += ["\x7f", "\x1f", "\x00"]


def context(rng: random.Random, lines: int) -> str:
    """A context of ``lines`` lines, some blank, some of spaces only, some longer than a step's budget."""
    said = []
    for _ in range(lines):
        shape = rng.random()
        if shape < 0.1:
            said.append("")
        elif shape < 0.2:
            said.append(" \t " * rng.randint(1, 3))
        else:
            width = rng.choice([5, 40, 200, 1500, 2600])
            said.append("".join(rng.choice(ALPHABET) for _ in range(width)))
    return "\n".join(said)


def rows(seed: int) -> list[dict[str, Any]]:
    """Rows of two sub-datasets; the context before the questions in some, after them in others."""
    rng = random.Random(seed)
    made = []
    for number in range(4):
        fields = {
            "questions": [f"Question {number} one?", f"Question {number} two?"],
            "answers": [["alpha"], "beta"],
            "metadata": {"source": "ruler_qa1_197K" if number % 2 else "eventqa_full"},
        }
        told = context(rng, rng.randint(5, 40))
        made.append({"context": told, **fields} if number % 2 else {**fields, "context": told})
    return made


def write_sources(folder: Path, seed: int = 7) -> dict[str, Path]:
    """The rows as JSON Lines (ASCII, every non-ASCII character escaped) and as one array (raw UTF-8, ``\\/``)."""
    folder.mkdir(parents=True, exist_ok=True)
    made = rows(seed)
    lines = folder / "Accurate_Retrieval.jsonl"
    lines.write_text("".join(json.dumps(row) + "\n" for row in made), encoding="utf-8")
    array = folder / "Accurate_Retrieval.json"
    array.write_text(json.dumps(made, ensure_ascii=False, indent=1).replace("/", "\\/"), encoding="utf-8")
    return {"jsonl": lines, "array": array}


def manifest(out: Path) -> dict[str, str]:
    """Each file the import wrote but its provenance note, by its path, as the SHA-256 of its bytes."""
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != "import.json"
    }


def imported(source: Path, out: Path) -> dict[str, str]:
    assert main(["import", "memoryagentbench", str(source), "--out", str(out), "--chars-per-step", "1000"]) == 0
    return manifest(out)


# What a decoded string is made of: escapes, both halves of a pair alone and together, backslashes, line ends.
PIECES = ["a", "\\", '"', "/", "\n", "\r", "\t", "\x00", "\x1f", "é", "中", "😀", "\ud83d", "\ude00", "\u2028", " "]


def read_back(path: Path, chunk: int) -> list[Any]:
    """The rows as the streamed reader gives them, each spooled context read back whole to compare."""
    return [
        {key: "".join(value.pieces()) if key == "context" else value for key, value in row.items()}
        for row in iter_rows(path, long_key="context", chunk=chunk)
    ]


@pytest.mark.parametrize("seed_block", range(4))
def test_a_streamed_context_is_what_json_loads_makes_of_it_whatever_the_buffer_cuts(tmp_path, seed_block):
    """Random strings, random key orders, array or JSON Lines, ASCII-escaped or raw, read through 1 to 13 chars."""
    path = tmp_path / "rows"
    for seed in range(seed_block * 60, seed_block * 60 + 60):
        rng = random.Random(seed)
        escaped = rng.random() < 0.5  # raw UTF-8 cannot hold a lone half of a pair; only its escape can
        letters = PIECES if escaped else [c for c in PIECES if not 0xD800 <= ord(c[0]) < 0xE000]
        made = []
        for _ in range(rng.randint(1, 3)):
            text = "".join(rng.choice(letters) for _ in range(rng.randint(0, 50)))
            fields = [("context", text), ("questions", ["q\\", "\u00e9"]), ("metadata", {"context": "small"})]
            rng.shuffle(fields)
            made.append(dict(fields))
        if rng.random() < 0.5:
            raw = json.dumps(made, ensure_ascii=escaped, indent=rng.choice([None, 1]))
            expected = json.loads(raw)
        else:
            raw = "".join(json.dumps(row, ensure_ascii=escaped) + "\n" for row in made)
            expected = [json.loads(line) for line in raw.split("\n") if line]
        path.write_text(raw, encoding="utf-8")
        assert read_back(path, rng.randint(1, 13)) == expected, (seed, raw)


@pytest.mark.parametrize(
    ("raw", "found"),
    [
        ('[{"context": "abc\\x41", "q": 1}]', "bad escape"),
        ('[{"context": "abc\\ud83', "bad escape or no closing quote"),
        ('[{"context": "a\tb"}]', "Invalid control character"),
        ('{"context": "fine"}\n{"context": "ab', "line 2"),
        ('[{"context": "a", }]', "trailing ','"),
        ('[{"context": "a" "b"}]', "expected ',' or '}'"),
    ],
)
def test_a_malformed_string_or_row_is_one_line_naming_the_record(tmp_path, raw, found):
    path = tmp_path / "rows.json"
    path.write_text(raw, encoding="utf-8")
    for chunk in (1, 4, 64):
        with pytest.raises(StreamError, match=found):
            read_back(path, chunk)


def test_a_malformed_json_lines_file_is_refused_at_its_first_bad_line_without_reading_on(tmp_path):
    """A bad value on line 2 of a 2 MB file is refused by its line's number, long before the file's end."""
    good = json.dumps({"context": "x" * 1000, "questions": ["q"], "answers": ["a"]}) + "\n"
    path = tmp_path / "Accurate_Retrieval.jsonl"
    path.write_text(good + '{"context": "ab", "questions": [1, 2}\n' + good * 2000, encoding="utf-8")
    read = json_stream.CountedDigest(hashlib.sha256())

    with pytest.raises(StreamError, match=": line 2 is not valid JSON"):
        for _ in iter_rows(path, long_key="context", digest=read):
            pass

    assert read.size < path.stat().st_size / 10


def test_each_context_goes_through_a_temporary_file_once_when_its_steps_are_written(tmp_path, monkeypatch):
    """The first pass reads the questions and checks each context, writing none of it down."""
    source = write_sources(tmp_path / "source")["jsonl"]
    opened = []
    real = json_stream.tempfile.TemporaryFile

    def counted(*args: Any, **kwargs: Any) -> Any:
        opened.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(json_stream.tempfile, "TemporaryFile", counted)
    imported(source, tmp_path / "out")

    assert len(opened) == len(rows(7)) == 4


def test_the_import_writes_the_very_files_it_wrote_when_each_context_was_held_whole(tmp_path, monkeypatch):
    """Byte for byte, whether the buffer is the usual 64K characters or 7, which cuts escapes and lines everywhere."""
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    sources = write_sources(tmp_path / "in")
    for kind, source in sources.items():
        assert imported(source, tmp_path / kind) == golden[kind]
    monkeypatch.setattr(json_stream, "CHUNK_CHARS", 7)
    for kind, source in sources.items():
        assert imported(source, tmp_path / f"{kind}-7") == golden[kind]


def test_a_context_of_whitespace_only_is_refused_naming_the_field(tmp_path, capsys):
    rows = tmp_path / "Accurate_Retrieval.jsonl"
    rows.write_text(json.dumps({"questions": ["q"], "answers": [["a"]], "context": " \n\t "}) + "\n", encoding="utf-8")
    assert main(["import", "memoryagentbench", str(rows), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "record 0: field 'context' must be a non-empty string, not a blank one" in err
    assert not (tmp_path / "out").exists()


def test_an_import_holds_a_buffer_of_a_long_context_never_the_context(tmp_path):
    """A context of 5 MB, before the questions: the import's traced peak stays a small part of it (it held it whole)."""
    rows = tmp_path / "Accurate_Retrieval.jsonl"
    with rows.open("w", encoding="utf-8") as out:
        out.write('{"context": "')
        for number in range(100_000):
            out.write(
                json.dumps(f"Document {number}: the keeper of gate {number} is K{number:07d}, caf\u00e9.\n")[1:-1]
            )
        out.write('", "questions": ["Who keeps gate 7?"], "answers": [["K0000007"]]}\n')
    size = rows.stat().st_size
    warm = tmp_path / "warm" / rows.name  # the first import loads modules: megabytes a second import does not trace
    warm.parent.mkdir()
    warm.write_text(json.dumps({"context": "a", "questions": ["q"], "answers": ["a"]}), encoding="utf-8")
    assert main(["import", "memoryagentbench", str(warm), "--out", str(tmp_path / "warm-out")]) == 0
    tracemalloc.start()
    try:
        assert main(["import", "memoryagentbench", str(rows), "--out", str(tmp_path / "out")]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size > 5_000_000 and peak < size / 3, f"peak {peak} bytes for a {size}-byte context"
    steps = sorted((tmp_path / "out" / "Accurate_Retrieval-0000").glob("ingest*.txt"))
    assert len(steps) > 80 and "K0099999, café." in max(steps, key=lambda p: int(p.stem[6:])).read_text("utf-8")


if __name__ == "__main__":  # writes the golden manifest: run once, on the code that held each context whole
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        sources = write_sources(Path(scratch) / "in")
        golden = {kind: imported(path, Path(scratch) / kind) for kind, path in sources.items()}
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.exit(0)
