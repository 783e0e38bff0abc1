"""A hostile agent that writes bytes no text decoder likes, on stdout and stderr.

Invalid UTF-8, NUL bytes, a lone surrogate's encoding (ED A0 80), a torn
multi-byte sequence and stray escapes; then, on its own line, the prompt's
last word as its answer (or a wrong one with MODE ``wrong``).
argv: MODE PROMPT.
"""

from __future__ import annotations

import sys

GARBAGE = (
    b"\xff\xfe\x00NUL\x00 \xed\xa0\x80 lone surrogate \xc3\x28 torn \xf0\x9f bell\x07 "
    b"\x1b[31mred\x1b[0m \x1b]0;title\x07\n"
)


def main() -> int:
    mode, prompt = sys.argv[1], sys.argv[-1]
    sys.stderr.buffer.write(GARBAGE * 3)
    sys.stderr.buffer.flush()
    sys.stdout.buffer.write(GARBAGE * 3)
    answer = "99999.99" if mode == "wrong" else prompt.split()[-1]
    sys.stdout.buffer.write(b"\xed\xa0\x80\n" + answer.encode() + b"\n")
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
