"""Input readers: platforms, model facts and option values."""
import pytest

from resolver.errors import InputError
from resolver.loader import load_rules
from resolver.model import model_facts
from resolver.options import coerce_args
from resolver.platforms import ALIAS_GPU_MEMORY_GB, PLATFORMS, find_platform, platform_from_capability
from resolver.provenance import Origin


def test_every_contract_alias_finds_its_platform_case_insensitively():
    for p in PLATFORMS:
        for alias in (p.name, *p.aliases):
            found = find_platform(alias.upper())
            assert found.name == p.name  # the same platform, with the memory of the card the alias names
            assert found.gpu_memory_gb == ALIAS_GPU_MEMORY_GB.get(alias, p.gpu_memory_gb)
    assert find_platform("mi300x").major == 9 and find_platform("mi300x").vendor == "amd"


def test_unknown_platform_lists_names_and_aliases():
    with pytest.raises(InputError, match=r"Did you mean 'b200'.*sm90 \(h100, h200"):
        find_platform("b20")


def test_spelled_out_capability():
    assert platform_from_capability("9.0").name == "sm90"
    assert platform_from_capability("9.4", "amd").name == "gfx942"
    with pytest.raises(InputError):
        platform_from_capability("nine")


def test_model_facts_carry_origins():
    facts = model_facts({"architectures": ["GlmMoeDsaForCausalLM"], "index_topk": 2048})
    assert facts["model.architecture"] == ("GlmMoeDsaForCausalLM",
                                           Origin("model", where="config.json", field="architectures[0]"))
    assert facts["model.index_topk"] == (2048, Origin("model", where="config.json", field="index_topk"))
    assert facts["model.learnable_sink"][0] is False
    from_arch = model_facts(arch="DeepseekV32ForCausalLM")
    assert from_arch["model.from_arch_only"] == (True, Origin("flag", where="--model-arch"))


@pytest.mark.parametrize("config", [{"architectures": "X"}, {"architectures": []}, {"index_topk": [1]}, [1]])
def test_malformed_model_configs_are_input_errors(config):
    with pytest.raises(InputError):
        model_facts(config)


def test_option_values_are_typed_normalised_and_checked():
    pack = load_rules()
    typed, notes, spelled = coerce_args(pack, {"page_size": "64", "enable_hisparse": "true", "kv_cache_dtype": "auto",
                                      "attention_backend": "nsa"})
    assert typed == {"page_size": 64, "enable_hisparse": True, "attention_backend": "dsa"}  # auto = unset
    assert notes == ["--attention-backend nsa is deprecated; it means dsa: use --attention-backend dsa"]
    assert spelled == {"attention_backend": "nsa"}
    for bad in ({"page_size": 1.5}, {"page_size": True}, {"enable_hisparse": "maybe"}, {"kv_cache_dtype": 8},
                {"dsa_decode_backend": "triton_sparse_mla"}, {"nope": 1}):
        with pytest.raises(InputError):
            coerce_args(pack, bad)


def test_a_multimodal_config_is_read_through_its_language_part():
    from resolver.model import model_facts

    config = {"architectures": ["DeepseekVL2ForCausalLM"], "kv_lora_rank": None,
              "language_config": {"kv_lora_rank": 512, "num_key_value_heads": 128, "head_dim": 192, "v_head_dim": 128}}
    facts = model_facts(config)
    # the top level wins when present
    assert facts["model.kv_lora_rank"] == (None, Origin("model", where="config.json", field="kv_lora_rank"))
    del config["kv_lora_rank"]
    facts = model_facts(config)
    assert facts["model.kv_lora_rank"] == (512, Origin("model", where="config.json",
                                                       field="language_config.kv_lora_rank"))
    assert facts["model.asymmetric_kv"][0] is True
    assert model_facts({"architectures": ["X"], "text_config": {"index_topk": 2048}})["model.index_topk"][0] == 2048


def test_sglangs_own_alias_spelling_is_not_called_deprecated():
    """--moe-runner-backend megamoe is SGLang 0.5.23's alias for --moe-a2a-backend megamoe with the runner left to
    auto (mega_moe_hook.py handle_moe_runner_backend_alias), not a deprecated spelling of auto; what it resolves to
    is oracle-checked in tests/test_moe_a2a.py (qwen-megamoe-runner*)."""
    typed, notes, spelled = coerce_args(load_rules(), {"moe_runner_backend": "megamoe"})
    assert typed == {} and spelled == {"moe_runner_backend": "megamoe"}  # auto = unset
    assert notes == [("--moe-runner-backend megamoe is an alias for --moe-a2a-backend megamoe: the all-to-all backend "
                      "is megamoe and the runner is left to pick (--moe-runner-backend auto)")]
    assert not any("deprecated" in n for n in notes)
