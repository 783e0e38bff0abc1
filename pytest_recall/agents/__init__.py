"""Reference agents that ship with pytest-recall, so the whole loop runs on a fresh machine."""
