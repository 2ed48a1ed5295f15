"""The ``resolve`` console script (and ``python -m resolver``): start the command line.

Importing the resolver takes a good part of a second (the rules, the engine, the kernel
adapters).  It happens here, inside a handler, so that Ctrl-C during start-up ends the way it
does later (``resolve: interrupted``, exit 130) and not with a traceback; this module itself
imports nothing of the resolver's.
"""
from __future__ import annotations

import signal
import sys

__all__ = ["main"]


def main() -> int:
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        try:
            sys.stderr.write("resolve: interrupted\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # nowhere to say it: the status says it
        return 128 + signal.SIGINT
    return run()
