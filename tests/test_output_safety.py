"""Output is safe for a terminal, and exit codes survive closed pipes and full disks."""
import io
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from resolver.cli import main
from resolver.explain import Style
from resolver.terminal import escape

from .conftest import ROOT, SEED_ARGS, SEED_ARGV

ENV = dict(os.environ, PYTHONPATH=ROOT)
# an escape sequence (clear the screen, cursor home), a bell, and a C1 control (CSI)
NASTY = "\x1b[2J\x1b[H\x07\x9b"
NASTY_SHOWN = "\\u001b[2J\\u001b[H\\u0007\\u009b"
OUR_CODES = re.compile("|".join(re.escape(f"\033[{code}m") for code in {*Style._CODES.values(), "0"}))


def _raw_controls(text: str) -> list[str]:
    """The control characters in ``text`` other than newline, tab and the renderer's own colour codes."""
    return [ch for ch in OUR_CODES.sub("", text) if (ord(ch) < 32 and ch not in "\n\t") or 0x7F <= ord(ch) <= 0x9F]


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    return code, out.getvalue(), err.getvalue()


def test_escape_keeps_text_and_shows_controls():
    assert escape("a├─é b") == "a├─é b"
    assert escape(NASTY + "\x7f\r\x00") == NASTY_SHOWN + "\\u007f\\u000d\\u0000"
    assert escape("a\tb\n") == "a\\u0009b\\u000a"  # a quoted piece: one line, always
    assert escape("a\tb\n\x1b", layout=True) == "a\tb\n\\u001b"  # a whole message: our layout stays
    assert escape("bad byte \udcff") == "bad byte \\udcff"  # argv's undecodable bytes: no UnicodeEncodeError
    assert json.loads(f'"{escape(NASTY)}"') == NASTY  # the escaped form is a JSON escape of the same text


def _model_argv(arch, tmp_path, source):
    if source == "arch":
        return ["--model-arch", arch]
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": [arch], "model_type": "llama"}))
    return ["--model-config", str(config)]


@pytest.mark.parametrize("source", ["arch", "config"])
@pytest.mark.parametrize("colour", ["never", "always"])
def test_text_output_escapes_the_architecture_and_keeps_its_colours(colour, source, tmp_path):
    model = _model_argv("Llama" + NASTY, tmp_path, source)
    code, out, _ = _cli(["--platform", "h100", *model, "--color", colour, "--explain"])
    assert code == 0
    assert f"model:    Llama{NASTY_SHOWN}" in OUR_CODES.sub("", out)
    assert _raw_controls(out) == []
    assert ("\033[1m" in out) == (colour == "always")


def test_a_newline_in_the_input_cannot_fake_a_line_of_the_report():
    _, out, _ = _cli(["--platform", "h100", "--model-arch", "X\n\nresolved configuration:\n  everything = fine"])
    assert "model:    X\\u000a\\u000aresolved configuration:\\u000a  everything = fine" in out


def test_a_forged_colour_code_is_escaped_too():
    _, out, _ = _cli(["--platform", "h100", "--model-arch", "X\033[1;31mY", "--color", "always"])
    assert "X\\u001b[1;31mY" in out


def test_rule_file_text_is_escaped(rules_dir):
    rules = rules_dir({"a.yaml": textwrap.dedent("""\
        schema: resolver/1
        rules:
          - id: conflict.test.arch
            kind: conflict
            doc: "Refuses every model \\e[2J\\a\\x9b."
            when: model.architecture != null
            message: "Model {model.architecture} is refused \\e[8m here."
        """)}, with_shipped_options=True)
    for colour in ("never", "always"):
        code, out, _ = _cli(["--rules", rules, "--platform", "h100", "--model-arch", "M" + NASTY, "--color", colour])
        assert code == 1 and _raw_controls(out) == []
        plain = OUR_CODES.sub("", out)
        assert f"Model M{NASTY_SHOWN} is refused \\u001b[8m here." in plain
        assert "Refuses every model \\u001b[2J\\u0007\\u009b." in plain


@pytest.mark.parametrize("source", ["arch", "config"])
def test_json_output_escapes_control_characters_and_keeps_the_value(source, tmp_path):
    code, out, _ = _cli(["--platform", "h100", *_model_argv("Llama" + NASTY, tmp_path, source), "--format", "json"])
    assert code == 0 and _raw_controls(out) == [] and "\033" not in out
    assert json.loads(out)["model"]["architecture"] == "Llama" + NASTY


def test_batch_lines_explain_lines_and_summary_are_escaped(tmp_path):
    batch = tmp_path / "r.jsonl"
    batch.write_text("\n".join(json.dumps(r) for r in [
        {"id": "bad" + NASTY, "platform": "h1" + NASTY},
        {"id": "conflict" + NASTY, "platform": "h100", "model_arch": "DeepseekV32ForCausalLM", "args": SEED_ARGS},
        {"id": "value" + NASTY, "platform": "h100", "args": {"kv_cache_dtype": NASTY}},
        {"id": "two\nlines", "platform": "h100", "model_arch": "X\ny", "args": {"page_size": "p\nq"}},
    ]) + "\n")
    code, out, err = _cli(["--batch", str(batch), "--explain", "--no-fixes"])
    assert code == 2
    assert _raw_controls(out) == [] and _raw_controls(err) == []
    assert [json.loads(line)["id"] for line in out.splitlines()] == [
        "bad" + NASTY, "conflict" + NASTY, "value" + NASTY, "two\nlines"]
    assert f"bad{NASTY_SHOWN}: error: unknown platform 'h1{NASTY_SHOWN}'" in err
    assert f"conflict{NASTY_SHOWN}: conflict" in err
    assert "\ntwo\\u000alines: error: " in err  # one line per request, whatever its id holds
    assert "\nbatch: 0 resolved, 1 conflicted, 3 failed\n" in err


@pytest.mark.parametrize("argv", [
    ["--platform", "h1" + NASTY],
    ["--platform", "h100", "--kv-cache-dtype", NASTY],
    ["--platform", "h100", "--model-config", "/nonexistent/" + NASTY],
    ["--platform", "h100", "--bogus" + NASTY],
    ["--platform", "h100", "--explain", "kv" + NASTY],
])
def test_error_messages_quoting_the_input_are_escaped(argv):
    code, out, err = _cli(argv)
    assert code == 2 and out == ""
    assert err.startswith("resolve: error: ") and _raw_controls(err) == []
    assert "\\u001b" in err or "\\x1b" in err  # shown, not dropped


# --- closed pipes and full disks ------------------------------------------------------------------

def _resolve(argv, stdout, stdin_text=""):
    return subprocess.run([sys.executable, "-m", "resolver", *argv], env=ENV, input=stdin_text, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120, check=False)


def _closed_pipe():
    """A pipe whose reader has already gone: the first write gets EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("argv, status", [
    (SEED_ARGV, 1),
    (SEED_ARGV + ["--format", "json"], 1),
    (["--platform", "h100", "--model-arch", "DeepseekV32ForCausalLM"], 0),
])
def test_a_closed_pipe_keeps_the_exit_status(argv, status):
    write = _closed_pipe()
    try:
        proc = _resolve(argv, write)
    finally:
        os.close(write)
    assert proc.returncode == status
    assert proc.stderr == ""  # no "Exception ignored ... BrokenPipeError"


def test_a_batch_read_by_head_exits_with_the_worst_line_so_far(tmp_path):
    """As in `resolve --batch FILE | head -1`: the batch stops at the first line it cannot write;
    its status is the worst of the lines resolved until then, that line included."""
    batch = tmp_path / "r.jsonl"
    resolved = json.dumps({"id": "ok", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM"})
    conflict = json.dumps({"id": "c", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM", "args": SEED_ARGS})
    batch.write_text("\n".join([resolved] + [conflict] * 200) + "\n")
    with subprocess.Popen([sys.executable, "-m", "resolver", "--batch", str(batch), "--no-fixes"], env=ENV,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        proc.wait(timeout=120)
    assert json.loads(first)["status"] == "resolved"
    assert proc.returncode == 1
    assert "stopped: the output was closed" in err
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err
    conflicted = int(re.search(r"batch: 1 resolved, (\d+) conflicted", err).group(1))
    assert conflicted < 200  # it stopped instead of resolving into the void


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [
    SEED_ARGV,
    ["--platform", "h100", "--model-arch", "DeepseekV32ForCausalLM", "--format", "json"],
    ["--batch", "-"],
    ["platforms"],
])
def test_a_full_disk_is_a_clean_exit_2(argv):
    line = json.dumps({"id": "ok", "platform": "h100", "model_arch": "DeepseekV32ForCausalLM"}) + "\n"
    with open("/dev/full", "w") as full:
        proc = _resolve(argv, full, line)
    assert proc.returncode == 2
    assert proc.stderr == "resolve: error: cannot write output: No space left on device\n"
