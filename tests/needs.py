"""Skip marks for what a test needs of this machine, defined once for every test file that needs it."""

from __future__ import annotations

import pytest

from pytest_recall.sessions.sandbox import check_bwrap

# bubblewrap that can make a user namespace here; the reason names what is wrong when it cannot.
needs_bwrap = pytest.mark.skipif(check_bwrap() is not None, reason=f"bwrap unusable here: {check_bwrap()}")
