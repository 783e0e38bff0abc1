"""Deliberately empty: this file sits above every bundled suite in the clone, so a user's run loads it too.

This project's own test settings and fixtures are in ``tests/pytest.ini`` and
``tests/conftest.py``, where only ``python -m pytest tests`` meets them; see
docs/development.md.
"""
