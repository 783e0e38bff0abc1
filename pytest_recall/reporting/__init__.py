"""Reporting: records, the report, the terminal summary, HTML, JUnit, the run log, shards, merge and compare."""
