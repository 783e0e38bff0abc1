"""A test agent with no memory that answers right anyway: the answer is in its own code.

It stands for a suite whose last question can be answered without the
earlier sessions; the no-memory control must then score as well as the run.
"""

from __future__ import annotations

ANSWER = "12345.67"

if __name__ == "__main__":
    print(f"The answer is {ANSWER}")
