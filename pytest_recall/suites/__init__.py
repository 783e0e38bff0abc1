"""Generated case suites: each module builds cases deterministically from a seed."""
