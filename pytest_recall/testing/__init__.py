"""Test doubles that are real programs: a fake model server that agent CLIs talk to over loopback."""

from __future__ import annotations

from pytest_recall.testing.fake_model import MODES, FakeModelServer, Mode, RateLimitStretch

__all__ = [
    "MODES",
    "FakeModelServer",
    "Mode",
    "RateLimitStretch",
]
