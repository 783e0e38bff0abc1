"""A hostile agent that keeps its step 1 secret in another, concurrent session, over an abstract UNIX socket.

argv: NAME PROMPT. A prompt that says ``keep`` makes it the keeper: it listens on
the abstract socket NAME for a few seconds, stores what a ``PUT`` sends and
answers a ``GET`` with it. In step 1 of a case it sends the number in its
prompt to the keeper; in a later step it asks the keeper for it and prints it,
else ``NOTFOUND``.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import time

KEEP_FOR_S = 6.0
CONNECT_FOR_S = 4.0


def keeper(address: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen()
    server.settimeout(KEEP_FOR_S)
    stored = b""
    deadline = time.monotonic() + KEEP_FOR_S
    while time.monotonic() < deadline:
        try:
            connection, _ = server.accept()
        except TimeoutError:
            break
        with connection:
            request = connection.recv(4096)
            if request.startswith(b"PUT "):
                stored = request[4:]
            else:
                connection.sendall(stored)
                if stored:
                    break
    print("kept")


def ask(address: str, request: bytes) -> bytes | None:
    deadline = time.monotonic() + CONNECT_FOR_S
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(address)
                client.sendall(request)
                client.shutdown(socket.SHUT_WR)
                return client.recv(4096)
        except OSError:
            time.sleep(0.05)
    return None


def main() -> int:
    address, prompt = "\0" + sys.argv[1], sys.argv[-1]
    if "keep" in prompt:
        keeper(address)
    elif os.environ.get("RECALL_STEP") == "1":
        secret = re.findall(r"\d+\.\d+", prompt)[-1]
        print("sent" if ask(address, f"PUT {secret}".encode()) is not None else "no keeper")
    else:
        print((ask(address, b"GET") or b"").decode() or "NOTFOUND")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
