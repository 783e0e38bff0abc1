"""What a case is: its model, and how it is read from a folder, a suite.toml or a trap task. No pytest here."""
