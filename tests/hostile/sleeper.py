"""An agent that answers at once, or hangs with a child, as its prompt says.

argv: MARKER PROMPT. A prompt whose second word is ``hang`` makes it start a
child and sleep; both carry MARKER in their command lines (and the agent its
prompt), so a test can see which case is running and look for survivors.
Otherwise it answers with the prompt's last word.
"""

from __future__ import annotations

import subprocess
import sys
import time


def main() -> int:
    marker, prompt = sys.argv[1], sys.argv[-1]
    words = prompt.split()
    if len(words) > 1 and words[1] == "hang":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", f"{marker}-child"])
        time.sleep(300)
    print(words[-1], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
