"""The child side of plugin isolation: import third-party kernel adapters, or run their probes, in a
process the registry can kill (resolver/adapters/registry.py starts it through resolver/child.py).

``python -I -c BOOT SYS_PATH SECONDS load|probe NAME...``: for each entry point NAME of the group
``resolver.kernels``, one JSON line: ``{"name": NAME}`` when it loads (``load``) or the probe's
answer (``probe``), else ``{"name": NAME, "error": repr(exception)}``.  A plugin that prints
cannot garble the answer: its standard output goes to /dev/null, the answer to the descriptor
saved before any plugin code runs.

The child ends itself too, SECONDS after it starts (plus one): the parent kills it at its
deadline, but a parent that is itself ended first (SIGTERM while it waits) cannot, and a child
stuck in C code holding the interpreter lock would then run on alone.  SIGALRM's default action
ends a process in the kernel, whatever its Python is doing.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from importlib.metadata import entry_points
from typing import Any

__all__ = ["BOOT", "GROUP", "main"]

#: the entry-point group third-party kernel adapters register under
GROUP = "resolver.kernels"

#: the child's bootstrap: the parent's sys.path (a plugin installed where the parent sees it), then main()
BOOT = ("import json, signal, sys; signal.signal(signal.SIGALRM, signal.SIG_DFL); "
        "signal.alarm(int(float(sys.argv[2])) + 1); sys.path[:] = json.loads(sys.argv[1]); "
        "from resolver.adapters.plugin_child import main; main(sys.argv[3:])")


def _answer(mode: str, obj: Any) -> dict[str, Any]:
    from .base import Probe

    if mode == "load":
        return {}
    try:
        got = obj.probe()
    except BaseException as exc:  # noqa: BLE001 - whatever a plugin raises is its answer
        return {"probe_error": repr(exc)}
    if not isinstance(got, Probe):
        return {"not_a_probe": type(got).__name__}
    return {"probe": dataclasses.asdict(got)}


def main(argv: list[str]) -> None:
    mode, names = argv[0], argv[1:]
    answers = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = sys.stderr  # stderr is /dev/null already (resolver/child.py)
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    for name in names:
        try:
            answer = _answer(mode, found[name].load())
        except BaseException as exc:  # noqa: BLE001 - a custom BaseException or GeneratorExit too
            answer = {"error": repr(exc)}
        answers.write(json.dumps({"name": name, **answer}) + "\n")
        answers.flush()
    answers.close()
    os._exit(0)  # a plugin's exit handlers cannot hang the child
