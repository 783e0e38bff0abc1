"""The project's own tests drive the plugin in subprocesses through pytester."""

pytest_plugins = ["pytester"]
