"""A test agent that consults its memory and then ignores what came back: ``ignores_memory.py COMMAND... PROMPT``.

It runs the agent it wraps (``recall-mcp``, say) on the prompt, so every
read and write reaches the memory server as before, throws away what that
agent printed, and answers that it does not know. What the memory returned
is the same as the wrapped agent's; only the answer differs. So a case with
its evidence retrieved is retrieved but wrong: a reasoning failure.
"""

from __future__ import annotations

import subprocess
import sys

if __name__ == "__main__":
    done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)
    print("I do not know.")
    sys.exit(done.returncode)
