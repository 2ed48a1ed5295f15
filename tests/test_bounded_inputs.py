"""Every bad input is bounded: exit 2 (or InputError) with a clear message, within seconds.

Inputs that could block or grow without end (devices, FIFOs, alias bombs) run in a child
process with a timeout and a memory limit, so that a regression fails the test instead of
hanging or exhausting the machine running it.
"""
import io
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from resolver import InputError, RuleFileErrors, resolve
from resolver.cli import main
from resolver.loader import load_rules
from resolver.safe_io import MAX_LINE_CHARS, bounded_lines, read_text

from .conftest import ROOT

BASE = ["--platform", "h100", "--model-arch", "DeepseekV32ForCausalLM"]

# the CLI under a 1 GiB address-space limit (a resolution needs under 512 MiB)
_LIMITED = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30)); "
            "sys.argv = ['resolve', *sys.argv[1:]]; runpy.run_module('resolver', run_name='__main__')")


def _bounded_cli(argv: list[str], timeout: float = 20) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _LIMITED, *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, check=False)
    return proc.returncode, proc.stderr, time.monotonic() - start


def _cli(argv: list[str]) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    code = main(argv, out, err)
    return code, out.getvalue(), err.getvalue(), time.monotonic() - start


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


# --- model configs ---

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_model_config(device):
    code, err, took = _bounded_cli(["--platform", "h100", "--model-config", device])
    assert code == 2 and f"--model-config: not a regular file (a character device): {device}" in err and took < 10


def test_a_fifo_as_model_config(fifo):
    code, err, took = _bounded_cli(["--platform", "h100", "--model-config", str(fifo)])
    assert code == 2 and "not a regular file (a FIFO)" in err and took < 10


def test_a_model_config_over_the_size_cap(tmp_path):
    big = tmp_path / "config.json"
    with open(big, "wb") as fh:
        fh.truncate(16 * 2**20 + 1)  # sparse: no disk used
    code, _, err, _ = _cli(["--platform", "h100", "--model-config", str(big)])
    assert code == 2 and "larger than the 16 MiB limit" in err


@pytest.mark.parametrize("text, needle", [
    ("[" * 100_000 + "]" * 100_000, "JSON nested deeper than 64 levels"),
    ('{"a": ' * 65 + "1" + "}" * 65, "JSON nested deeper than 64 levels"),
    ('{"architectures": ["DeepseekV32ForCausalLM"], "index_topk": ' + "9" * 5000 + "}",
     "an integer of 5000 digits (the limit is 100)"),
], ids=["deep-lists", "deep-objects", "5000-digits"])
def test_deep_or_huge_json_in_a_model_config(tmp_path, text, needle):
    config = tmp_path / "config.json"
    config.write_text(text)
    code, _, err, took = _cli(["--platform", "h100", "--model-config", str(config)])
    assert code == 2 and f"--model-config: {config}: {needle}" in err and "Traceback" not in err and took < 5


def test_json_at_the_depth_cap_is_read(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"architectures": ["DeepseekV32ForCausalLM"], "x": ' + "[" * 63 + "]" * 63 + "}")
    assert _cli(["--platform", "h100", "--model-config", str(config)])[0] == 0


def test_a_nul_byte_in_the_model_path_via_the_api():
    with pytest.raises(InputError, match=r"--model-config: the path '\\x00' contains a NUL byte"):
        resolve({}, platform="h100", model="\x00")


def test_an_unencodable_model_path_via_the_api():
    with pytest.raises(InputError, match="cannot be encoded"):
        resolve({}, platform="h100", model="\ud800")


# --- rule files ---

def test_a_nul_byte_in_rules_via_the_cli():
    code, _, err, _ = _cli(["--rules", "\x00", *BASE])
    assert code == 2 and "--rules: the path '\\x00' contains a NUL byte" in err


def test_a_nul_byte_in_rules_via_the_api():
    with pytest.raises(InputError, match="contains a NUL byte"):
        resolve({}, platform="h100", rules="/tmp/\x00rules")


def test_a_fifo_as_rule_file(rules_dir):
    directory = rules_dir({}, with_shipped_options=True)
    os.mkfifo(os.path.join(directory, "blocked.yaml"))
    code, err, took = _bounded_cli(["--rules", directory, *BASE])
    assert code == 2 and "blocked.yaml:0: cannot read: not a regular file (a FIFO)" in err and took < 10


def test_the_loader_itself_never_blocks_on_a_fifo(rules_dir):
    # load_rules is also reached without get_engine's check (docgen): its own read must not block
    directory = rules_dir({}, with_shipped_options=True)
    os.mkfifo(os.path.join(directory, "blocked.yaml"))
    outcome: list[RuleFileErrors] = []

    def load() -> None:
        with pytest.raises(RuleFileErrors) as info:
            load_rules(directory)
        outcome.append(info.value)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "load_rules blocked on a FIFO"
    assert "cannot read: not a regular file (a FIFO)" in str(outcome[0])


def test_a_rule_file_linked_to_dev_zero(rules_dir):
    directory = rules_dir({}, with_shipped_options=True)
    os.symlink("/dev/zero", os.path.join(directory, "zero.yaml"))
    code, err, took = _bounded_cli(["--rules", directory, *BASE])
    assert code == 2 and "zero.yaml:0: cannot read: not a regular file (a character device)" in err and took < 10


def test_a_rule_file_over_the_size_cap(rules_dir):
    directory = rules_dir({}, with_shipped_options=True)
    with open(os.path.join(directory, "big.yaml"), "wb") as fh:
        fh.truncate(2**20 + 1)
    code, _, err, _ = _cli(["--rules", directory, *BASE])
    assert code == 2 and "big.yaml:0: cannot read: larger than the 1 MiB limit" in err


def _laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\nschema: 1\nrules: *a{levels - 1}\n"


def test_a_billion_laughs_rule_file(rules_dir):
    directory = rules_dir({"laughs.yaml": _laughs()}, with_shipped_options=True)
    code, err, took = _bounded_cli(["--rules", directory, *BASE])
    assert code == 2 and "laughs.yaml:0: the file expands to more than 100000 YAML nodes" in err and took < 10


def test_a_recursive_alias_in_a_rule_file(rules_dir):
    directory = rules_dir({"loop.yaml": "schema: 1\nrules: &loop [*loop]\n"}, with_shipped_options=True)
    code, _, err, took = _cli(["--rules", directory, *BASE])
    assert code == 2 and "loop.yaml:0: a YAML alias refers to a node that contains it" in err and took < 5


def test_a_few_aliases_are_fine(rules_dir):
    # the shipped pack shares messages and fixes through aliases
    directory = rules_dir({"small.yaml": _laughs(3).replace("rules: *a2", "rules: []")}, with_shipped_options=True)
    code, _, err, _ = _cli(["--rules", directory, *BASE])
    assert code == 2 and "additional" in err.lower() and "YAML nodes" not in err  # a schema error, not the cap


# --- batch lines ---

def _batch(tmp_path, lines: list[str]) -> tuple[int, list[dict], float]:
    requests = tmp_path / "requests.jsonl"
    requests.write_text("\n".join(lines) + "\n")
    code, out, err, took = _cli(["--batch", str(requests)])
    assert "Traceback" not in err
    return code, [json.loads(line) for line in out.splitlines()], took


OK_LINE = json.dumps({"id": "ok", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM"})


@pytest.mark.parametrize("line, needle", [
    ('{"id": "deep", "platform": "h100", "args": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "JSON nested deeper than 64 levels"),
    ('{"id": "deep", "platform": "h100", "model": ' + '{"a": ' * 70 + "1" + "}" * 70 + "}",
     "JSON nested deeper than 64 levels"),
    ('{"id": 1, "platform": "h100", "args": {"page_size": ' + "1" * 5000 + "}}",
     "an integer of 5000 digits (the limit is 100)"),
    ('{"id": 1, "platform": "h100", "model_arch": "' + "x" * MAX_LINE_CHARS + '"}',
     "longer than the 1 MiB limit"),
], ids=["deep-lists", "deep-objects", "5000-digits", "over-1MiB"])
def test_a_bad_batch_line_is_an_error_line_and_the_batch_goes_on(tmp_path, line, needle):
    code, results, took = _batch(tmp_path, [line, OK_LINE])
    assert code == 2 and took < 5
    assert results[0]["status"] == "error" and needle in results[0]["error"] and not results[0].get("internal")
    assert results[1]["status"] == "resolved"


def test_bounded_lines_never_holds_more_than_the_cap():
    # a stream without newlines (/dev/zero as --batch) yields one cut line, not a line of every byte
    stream = io.StringIO("x" * (3 * 1000 + 7) + "\nnext\n")
    lines = list(bounded_lines(stream, limit=1000))
    assert [len(line) for line in lines] == [1001, 5]
    assert list(bounded_lines(["a\n", "b\n"])) == ["a\n", "b\n"]


def test_read_text_refuses_a_directory_and_bad_utf8(tmp_path):
    with pytest.raises(InputError, match="a directory"):
        read_text(str(tmp_path))
    (tmp_path / "latin1.json").write_bytes(b'{"name": "caf\xe9"}')
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 0xe9 at offset 13\)"):
        read_text(str(tmp_path / "latin1.json"))
