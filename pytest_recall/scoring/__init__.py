"""Scoring: the judges, the one verdict function, the grader and the statistics. Pure functions: no pytest, no I/O."""
