#!/usr/bin/env python3
"""Turn SGLang's own flag catalogue into the resolver's flag table.

    python tools/sync_flags.py CATALOGUE.json > resolver/data/sglang_flags.json

CATALOGUE.json is what SGLang's argparse says about itself (``ServerArgs.add_cli_args`` on a
plain ``argparse.ArgumentParser``, every action dumped: option strings, dest, type, choices,
default, action, nargs, const).  The table keeps the facts a parser needs and drops SGLang's
help prose.  Re-run it when SGLang moves; tests/unit/test_catalogue.py checks that the shipped
table is what this script makes of the catalogue.
"""
from __future__ import annotations

import json
import sys
from typing import Any

# SGLang's ``type=`` callables, by what they accept on the command line
_TYPES = {
    None: "str", "str": "str", "int": "int", "float": "float",
    "json.loads": "json",
    "sglang.srt.utils.common.human_readable_int": "int_suffix",  # 128k, 1M, or a plain integer
    "sglang.srt.utils.common.json_list_type": "json",
    "sglang.srt.utils.common.nullable_str": "nullable_str",  # "None" / "null" mean None
    "sglang.srt.model_executor.cuda_graph_config.parse_cuda_graph_backend_arg": "str",
    "sglang.srt.model_executor.cuda_graph_config.parse_cuda_graph_config_arg": "str",
}


def _kind(action: dict[str, Any]) -> str:
    """What typing the flag does: store a value, set true, set a constant, or --x / --no-x."""
    name = action["action"].rsplit(".", 1)[-1]
    return {
        "store": "store", "store_true": "true", "store_false": "false",
        "BooleanOptionalAction": "bool_optional", "DeprecatedStoreTrueAction": "true",
        "DeprecatedStoreConstAction": "store_const", "LoRAPathAction": "store",
    }[name]


def table(catalogue: dict[str, Any]) -> dict[str, Any]:
    # keyed by option strings: a dest can have a current flag and a deprecated one (--monokernel-backend)
    deprecated = {tuple(d["option_strings"]): d.get("new_flag") for d in catalogue.get("deprecated_flags", ())}
    flags = []
    for action in catalogue["actions"]:
        if not action["option_strings"] or action["dest"] == "help":
            continue
        kind = _kind(action)
        entry: dict[str, Any] = {
            "dest": action["dest"],
            "flags": action["option_strings"],
            "kind": kind,
            "type": "bool" if kind in ("true", "false", "bool_optional") else _TYPES[action["type"]],
            "default": action["default"],
        }
        if action["nargs"] not in (None, 0):
            entry["nargs"] = action["nargs"]
        if action["choices"]:
            entry["choices"] = action["choices"]
        if kind == "store_const":
            entry["const"] = action["const"] if action["const"] is not None else True
        if action.get("required"):
            entry["required"] = True
        strings = tuple(action["option_strings"])
        if strings in deprecated:
            entry["deprecated"] = deprecated[strings] or True
        flags.append(entry)
    renames = catalogue.get("handle_deprecated_args", {}).get("source_dicts", {})
    return {
        "sglang_version": catalogue["sglang_version"],
        "read_from": catalogue["source"],
        "flags": flags,
        # value spellings SGLang rewrites at start-up (attention backends, tool-call parsers)
        "value_renames": {k: renames[k] for k in sorted(renames)},
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write(__doc__ or "")
        return 2
    with open(argv[0], encoding="utf-8") as fh:
        catalogue = json.load(fh)
    sys.stdout.write(json.dumps(table(catalogue), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
