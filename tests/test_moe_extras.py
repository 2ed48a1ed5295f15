"""EPLB, the expert distribution recorder, replica dispatch, two-/single-batch overlap and elastic EP
(rules/moe_extras.yaml) against SGLang 0.5.23.

Every case was asked of the oracle (SGLang 0.5.23 on CPU, docs/parity.md) on sm90 with the Qwen3 30B-A3B
catalogue config; ``test_the_table_is_sglangs_answer`` asks it again when it is installed.  A value of
``None`` in SGLang's column is a field SGLang leaves unset.
"""

import pytest

from resolver.api import get_engine, resolve_request

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

QWEN_MOE = CATALOGUE["Qwen/Qwen3-30B-A3B"]

#: fields compared: the recorder's mode and buffer, the replica dispatch, the EPLB algorithm
FIELDS = ("expert_distribution_recorder_mode", "expert_distribution_recorder_buffer_size",
          "ep_dispatch_algorithm", "eplb_algorithm")

VALUES = [
    ({}, (None, 1000, None, "auto")),
    # EPLB: the recorder records stat; without an all-to-all the replica pick is dynamic (rank-invariant)
    ({"enable_eplb": True, "tp_size": 8, "ep_size": 8}, ("stat", 1000, "dynamic", "auto")),
    # with an all-to-all backend it is static
    ({"enable_eplb": True, "tp_size": 8, "moe_a2a_backend": "deepep"}, ("stat", 1000, "static", "auto")),
    # the MegaMoE runner alias selects an all-to-all backend too
    ({"enable_eplb": True, "tp_size": 8, "moe_runner_backend": "megamoe"}, ("stat", 1000, "static", "auto")),
    # a recorded initial placement alone sets the dispatch, not the recorder
    ({"init_expert_location": "/tmp/loc.json", "tp_size": 8, "ep_size": 8}, (None, 1000, "dynamic", "auto")),
    # the buffer follows the rebalance period
    ({"enable_eplb": True, "tp_size": 8, "ep_size": 8, "eplb_rebalance_num_iterations": 10},
     ("stat", 10, "dynamic", "auto")),
    ({"eplb_rebalance_num_iterations": 50, "expert_distribution_recorder_mode": "per_pass"},
     ("per_pass", 50, None, "auto")),
    # a balancedness report needs the recorder
    ({"expert_balancedness_report_mode": "server_log"}, ("stat", 1000, None, "auto")),
    # an all-to-all backend routes each token to one rank: a typed lp stays
    ({"enable_eplb": True, "tp_size": 8, "moe_a2a_backend": "deepep", "ep_dispatch_algorithm": "lp"},
     ("stat", 1000, "lp", "auto")),
    # elastic EP ("none" counts as set) turns EPLB's auto algorithm elasticity-aware
    ({"elastic_ep_backend": "none", "tp_size": 8, "ep_size": 8, "enable_eplb": True},
     ("stat", 1000, "dynamic", "elasticity_aware")),
    ({"elastic_ep_backend": "mooncake", "tp_size": 8}, (None, 1000, None, "auto")),
    # two-batch overlap with attention DP (no all-to-all), or with DeepEP; single-batch overlap alone
    ({"enable_two_batch_overlap": True, "tp_size": 8, "attn_dp_size": 8}, (None, 1000, None, "auto")),
    ({"enable_two_batch_overlap": True, "tp_size": 8, "moe_a2a_backend": "deepep"}, (None, 1000, None, "auto")),
    ({"enable_single_batch_overlap": True}, (None, 1000, None, "auto")),
    # the draft's own all-to-all backend is passed through
    ({"speculative_moe_a2a_backend": "deepep"}, (None, 1000, None, "auto")),
]

REFUSED = [
    ({"enable_eplb": True}, "conflict.eplb.needs-ep", ""),   # SGLang asserts ep_size > 1 without a message
    ({"enable_eplb": True, "tp_size": 8, "ep_size": 8, "ep_dispatch_algorithm": "static"},
     "conflict.eplb.dispatch-rank-variant", "--ep-dispatch-algorithm static picks a different physical replica"),
    ({"tp_size": 8, "ep_size": 8, "ep_dispatch_algorithm": "lp"},
     "conflict.eplb.dispatch-rank-variant", "--ep-dispatch-algorithm lp picks a different physical replica"),
    ({"enable_two_batch_overlap": True}, "conflict.tbo.no-a2a-needs-attn-dp",
     "attention DP (--attn-dp-size) is required"),
    ({"enable_two_batch_overlap": True, "tp_size": 8, "moe_a2a_backend": "megamoe"}, "conflict.tbo.megamoe",
     "--moe-a2a-backend megamoe has no two-batch / single-batch overlap decomposition"),
    ({"enable_single_batch_overlap": True, "tp_size": 8, "moe_runner_backend": "megamoe"}, "conflict.tbo.megamoe",
     "--moe-a2a-backend megamoe has no two-batch / single-batch overlap decomposition"),
    ({"elastic_ep_backend": "mooncake", "tp_size": 8, "ep_size": 8, "enable_eplb": True, "eplb_algorithm": "deepseek"},
     "conflict.elastic-ep.eplb-algorithm", "Elastic EP requires eplb_algorithm to be set to 'auto'"),
    ({"elastic_ep_backend": "nixl", "tp_size": 8, "pp_size": 2}, "conflict.elastic-ep.pp",
     "PP size should be set to 1 under elastic EP"),
    # a DeepEP v2 draft is refused even without speculative decoding
    ({"speculative_moe_a2a_backend": "deepep_v2"}, "conflict.spec.draft-a2a.deepep-v2",
     "DeepEP v2 MoE is not validated as a speculative draft backend"),
    ({"speculative_moe_a2a_backend": "deepep_v2", "speculative_algorithm": "NGRAM"},
     "conflict.spec.draft-a2a.deepep-v2", "DeepEP v2 MoE is not validated as a speculative draft backend"),
]


def _resolve(fixes: bool = False, **args):
    return resolve_request(get_engine(), platform="sm90", model=dict(QWEN_MOE), args=args, fixes=fixes)


@pytest.mark.parametrize("args, expected", VALUES)
def test_values(args, expected):
    res = _resolve(**args)
    assert not res.conflicts, [c.rule.id for c in res.conflicts]
    assert tuple(res.values[f] for f in FIELDS) == expected


@pytest.mark.parametrize("args, rule, phrase", REFUSED)
def test_refusals(args, rule, phrase):
    res = _resolve(**args)
    assert {c.rule.id for c in res.conflicts} == {rule}
    assert phrase in " ".join(c.message for c in res.conflicts)


@pytest.mark.parametrize("args, rule, phrase", REFUSED)
def test_every_fix_resolves(args, rule, phrase):
    res = _resolve(fixes=True, **args)
    fixes = [f for c in res.conflicts for f in c.fixes]
    assert fixes
    for fix in fixes:
        changed = {k: v for k, v in {**args, **fix.set}.items() if k not in fix.unset}
        assert not _resolve(**changed).conflicts, (args, fix)


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the table again."""
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    requests = [{"id": f"v{n}", "platform": "sm90", "model": QWEN_MOE, "args": a} for n, (a, _) in enumerate(VALUES)]
    requests += [{"id": f"r{n}", "platform": "sm90", "model": QWEN_MOE, "args": a}
                 for n, (a, _, _) in enumerate(REFUSED)]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    defaults = {"expert_distribution_recorder_mode": None, "expert_distribution_recorder_buffer_size": None,
                "ep_dispatch_algorithm": None, "eplb_algorithm": "auto"}
    for n, (args, expected) in enumerate(VALUES):
        got = answers[f"v{n}"]
        assert got["status"] == "resolved", (args, got)
        values = got["values"]
        assert tuple(values.get(f, args.get(f, defaults[f])) for f in FIELDS) == expected, (args, values)
    for n, (args, _rule, phrase) in enumerate(REFUSED):
        got = answers[f"r{n}"]
        assert got["status"] == "error" and phrase in got["message"], (args, got)


# FlashInfer MegaMoE on one node sets NVSHMEM's variables (os.environ.setdefault, process-wide) unless a draft
# has its own all-to-all backend (rules/env.yaml fact.env.megamoe-one-node); DeepSeek V3 on sm100, NVFP4 online
DEEPSEEK = CATALOGUE["deepseek-ai/DeepSeek-V3"]
_MEGAMOE = {"tp_size": 8, "attn_dp_size": 8, "enable_dp_lm_head": True, "moe_a2a_backend": "flashinfer_megamoe",
            "quantization": "modelopt_fp4", "speculative_algorithm": "EAGLE"}
NVSHMEM = {"NVSHMEM_REMOTE_TRANSPORT": "none", "NVSHMEM_IB_ENABLE_IBGDA": "0", "NVSHMEM_DISABLE_LOCAL_ONLY_PROXY": "1"}
ENV = [
    ({**_MEGAMOE, "speculative_moe_a2a_backend": "deepep"}, {}),
    ({**_MEGAMOE, "speculative_moe_a2a_backend": "none"}, NVSHMEM),
    (_MEGAMOE, NVSHMEM),
]


def _nvshmem(env: dict) -> dict:
    return {k: v for k, v in (env or {}).items() if k.startswith("NVSHMEM_")}


@pytest.mark.parametrize("args, expected", ENV)
def test_a_draft_all_to_all_leaves_nvshmem_alone(args, expected):
    res = resolve_request(get_engine(), platform="sm100", model=dict(DEEPSEEK), args=args, fixes=False)
    assert not res.conflicts, [c.rule.id for c in res.conflicts]
    assert _nvshmem(res.env) == expected


def test_the_env_table_is_sglangs_answer():
    python = oracle_python()
    from tools.sglang_diff import ask_oracle

    requests = [{"id": f"e{n}", "platform": "sm100", "model": DEEPSEEK, "args": a} for n, (a, _) in enumerate(ENV)]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    for n, (args, expected) in enumerate(ENV):
        got = answers[f"e{n}"]
        assert got["status"] == "resolved", (args, got)
        assert _nvshmem(got.get("env")) == expected, (args, got.get("env"))
