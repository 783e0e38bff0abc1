"""Running agent sessions: spawning on a pty, the event loop, live turns, reaping, the sandbox. No pytest here."""
