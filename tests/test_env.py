"""The environment SGLang's resolution sets (rules/env.yaml) against SGLang 0.5.23.

Each expected environment was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) with the
catalogue's configs: the variables the request brought, with what SGLang's resolution set on top
(the oracle records what changed).  The differential test (tests/test_sglang_differential.py)
compares the environment of every random launch too.
"""
import json
import subprocess
import sys

import pytest

from resolver.api import get_engine, resolve, resolve_request
from resolver.cli import main
from resolver.errors import InputError

from .conftest import CATALOGUE, ROOT
from .oracle import ORACLE, oracle_python

CASES = [
    # DeepSeek-V3 prefilling with trtllm_mla captures no prefill graph: with no decode graph either, no rank
    # captures a collective and NCCL_GRAPH_REGISTER stays unset (found by a fresh random sample)
    ('sm100', 'deepseek-ai/DeepSeek-V3', {'tp_size': 4, 'disable_decode_cuda_graph': True}, {},
     {'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0',
      'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {}, {},
     {'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0',
      'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'tp_size': 2}, {},
     {'NCCL_GRAPH_REGISTER': '0', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0', 'SGLANG_ENABLE_TORCH_COMPILE': '0',
      'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'tp_size': 2, 'enable_deterministic_inference': True}, {},
     {'NCCL_ALGO': 'allreduce:tree', 'NCCL_GRAPH_REGISTER': '0', 'NCCL_MAX_NCHANNELS': '8', 'NCCL_MIN_NCHANNELS': '8',
      'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '1',
      'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_FLASHINFER_MOE_FUSED_FINALIZE': '0',
      'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'tp_size': 2, 'attention_backend': 'flex_attention'}, {},
     {'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0',
      'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'enable_torch_compile': True,
                                                  'disable_outlines_disk_cache': True}, {},
     {'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '1', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0',
      'SGLANG_ENABLE_TORCH_COMPILE': '1', 'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'mm_feature_transport': 'cuda_ipc'}, {},
     {'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0',
      'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '1'}),
    ('sm100', 'deepseek-ai/DeepSeek-V3.2', {'tp_size': 8}, {},
     {'NCCL_GRAPH_REGISTER': '0', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD': '2048', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0',
      'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('gfx942', 'deepseek-ai/DeepSeek-V3.2', {'tp_size': 8}, {},
     {'GPU_PINNED_MIN_XFER_SIZE': '4194304', 'NCCL_GRAPH_REGISTER': '0', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD': '2048', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0',
      'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_OPT_USE_TOPK_V2': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('gfx942', 'meta-llama/Llama-3.1-8B-Instruct', {'tp_size': 2, 'disaggregation_mode': 'prefill'}, {},
     {'GPU_PINNED_MIN_XFER_SIZE': '4194304', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0', 'SGLANG_ENABLE_TORCH_COMPILE': '0',
      'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('gfx942', 'meta-llama/Llama-3.1-8B-Instruct', {'tp_size': 2, 'enable_deterministic_inference': True}, {},
     {'GPU_PINNED_MIN_XFER_SIZE': '4194304', 'NCCL_GRAPH_REGISTER': '0', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '1', 'SGLANG_ENABLE_TORCH_COMPILE': '0',
      'SGLANG_FLASHINFER_MOE_FUSED_FINALIZE': '0', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm120', 'Qwen/Qwen3-8B', {'tp_size': 4}, {},
     {'NCCL_GRAPH_REGISTER': '0', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0', 'SGLANG_ENABLE_TORCH_COMPILE': '0',
      'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm80', 'Qwen/Qwen3-8B', {'dp_size': 2}, {},
     {'NCCL_GRAPH_REGISTER': '0', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0', 'SGLANG_ENABLE_TORCH_COMPILE': '0',
      'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'tp_size': 2}, {'NCCL_GRAPH_REGISTER': '1'},
     {'NCCL_GRAPH_REGISTER': '1', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0', 'SGLANG_ENABLE_TORCH_COMPILE': '0',
      'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {}, {'SGLANG_ENABLE_TORCH_COMPILE': '1'},
     {'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0', 'SGLANG_OPT_FP8_WO_A_GEMM': 'False',
      'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'tp_size': 2, 'enable_deterministic_inference': True},
     {'SGLANG_DETERMINISTIC_NCCL_NCHANNELS': '4'},
     {'SGLANG_DETERMINISTIC_NCCL_NCHANNELS': '4', 'NCCL_ALGO': 'allreduce:tree', 'NCCL_GRAPH_REGISTER': '0',
      'NCCL_MAX_NCHANNELS': '4', 'NCCL_MIN_NCHANNELS': '4', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '1', 'SGLANG_ENABLE_TORCH_COMPILE': '0',
      'SGLANG_FLASHINFER_MOE_FUSED_FINALIZE': '0', 'SGLANG_OPT_FP8_WO_A_GEMM': 'False',
      'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    # symmetric memory: a 4 GB preallocation unless the environment names one (kept as it is)
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'enable_symm_mem': True}, {},
     {'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0', 'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0',
      'SGLANG_ENABLE_TORCH_COMPILE': '0', 'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_SYMM_MEM_PREALLOC_GB_SIZE': '4',
      'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
    ('sm90', 'meta-llama/Llama-3.1-8B-Instruct', {'enable_symm_mem': True}, {'SGLANG_SYMM_MEM_PREALLOC_GB_SIZE': '8'},
     {'SGLANG_SYMM_MEM_PREALLOC_GB_SIZE': '8', 'SGLANG_DISABLE_OUTLINES_DISK_CACHE': '0',
      'SGLANG_ENABLE_DETERMINISTIC_INFERENCE': '0', 'SGLANG_ENABLE_TORCH_COMPILE': '0',
      'SGLANG_OPT_FP8_WO_A_GEMM': 'False', 'SGLANG_USE_CUDA_IPC_TRANSPORT': '0'}),
]


@pytest.mark.parametrize("platform, model, args, env, expected", CASES)
def test_the_environment_is_sglangs(platform, model, args, env, expected):
    res = resolve_request(get_engine(), platform=platform, model=dict(CATALOGUE[model]), args=args, env=env,
                          fixes=False)
    assert not res.conflicts
    assert res.env == expected


def test_the_table_is_still_sglangs_answer():
    """Ask the oracle again: the expectations above are SGLang's, not copies of the resolver's."""
    python = oracle_python()
    requests = [{"id": str(n), "platform": p, "model": CATALOGUE[m], "args": a, **({"env": e} if e else {})}
                for n, (p, m, a, e, _) in enumerate(CASES)]
    from tools.sglang_diff import ask_oracle

    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for n, (_, _, _, env, expected) in enumerate(CASES):
        assert {**env, **answers[str(n)]["env"]} == expected, n


def test_env_is_apart_from_the_values():
    res = resolve({"tp_size": 2}, platform="h100", model=dict(CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]))
    assert res.env["NCCL_GRAPH_REGISTER"] == "0"
    assert not any(name.isupper() for name in res.values)
    data = res.to_dict()
    assert data["env"] == res.env and "NCCL_GRAPH_REGISTER" not in data["values"]
    # explained like any value: the rule that set it, with its file and line
    d = data["derivations"]["NCCL_GRAPH_REGISTER"]
    assert d["source"] == "default" and d["rule"]["file"] == "rules/env.yaml"


def test_a_variable_the_rules_do_not_know_is_carried_and_listed_as_not_checked():
    res = resolve(platform="h100", model_arch="LlamaForCausalLM", env={"HF_HUB_OFFLINE": "1"})
    assert res.env["HF_HUB_OFFLINE"] == "1"
    assert "HF_HUB_OFFLINE" in res.unchecked


@pytest.mark.parametrize("env", [{"A=B": "1"}, {"X": 1}, {"X": "a\0b"}, ["X"]])
def test_bad_environments_are_input_errors(env):
    with pytest.raises(InputError):
        resolve(platform="h100", model_arch="LlamaForCausalLM", env=env)


def test_an_environment_variable_is_not_an_arg():
    with pytest.raises(InputError, match="environment variable"):
        resolve({"NCCL_GRAPH_REGISTER": "1"}, platform="h100", model_arch="LlamaForCausalLM")


def test_format_env_prints_shell_exports(capsys):
    code = main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--tp", "2", "--format", "env",
                 "--env", "FOO=a b", "--env", "SGLANG_ENABLE_TORCH_COMPILE=1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "export FOO='a b'\n" in out and "export NCCL_GRAPH_REGISTER=0\n" in out
    # SGLang writes SGLANG_ENABLE_TORCH_COMPILE from --enable-torch-compile over the environment's value
    assert "export SGLANG_ENABLE_TORCH_COMPILE=0\n" in out
    # the lines are shell: sourcing them sets exactly these variables
    run = subprocess.run(["sh", "-c", out + "env"], capture_output=True, text=True, check=True)
    assert "FOO=a b" in run.stdout.splitlines()


def test_env_flag_needs_name_and_value(capsys):
    assert main(["--platform", "h100", "--model-arch", "LlamaForCausalLM", "--env", "NOVALUE"]) == 2
    assert "--env expects NAME=VALUE" in capsys.readouterr().err


def test_a_batch_line_gives_its_environment():
    line = json.dumps({"platform": "h100", "model_arch": "LlamaForCausalLM", "args": {"tp_size": 2},
                       "env": {"NCCL_GRAPH_REGISTER": "1"}})
    run = subprocess.run([sys.executable, "-m", "resolver", "--batch", "-"], input=line, capture_output=True,
                         text=True, cwd=ROOT, check=False)
    assert run.returncode == 0, run.stderr
    # os.environ.setdefault: SGLang keeps an explicit NCCL_GRAPH_REGISTER
    assert json.loads(run.stdout)["env"]["NCCL_GRAPH_REGISTER"] == "1"
