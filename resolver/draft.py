"""The draft checkpoint of speculative decoding, as facts: the few config.json fields SGLang
0.5.23 reads from it while resolving a launch (speculative_hook.py).

The config comes from the request (``draft_model`` in a batch line or the API), else from
``--speculative-draft-model-path`` found the way ``--model-path`` is (a local directory, the
Hugging Face cache, the model catalogue: resolver/model_source.py).  Not found, every fact is
null and says why; the rules then do what SGLang does when it cannot read the draft (a DFlash
block of 16).  What the facts mean is decided by rules (rules/speculative.yaml).
"""
from __future__ import annotations

from typing import Any

from .errors import InputError
from .numbers import engine_number
from .provenance import Origin

__all__ = ["DRAFT_FACTS", "GEMMA4_ASSISTANTS", "draft_facts", "find_draft"]

#: fact name -> (config.json fields, meaning)
DRAFT_FACTS: dict[str, tuple[str, str]] = {
    "draft.architecture": ("architectures[0]", "the draft model class"),
    "draft.model_type": ("model_type",
                         "the draft's model type (SGLang picks the draft's boundary reduction by it too)"),
    "draft.block_size": ("dflash_config.block_size, block_size",
                         "a DFlash draft's block size: the tokens it drafts per step (SGLang: "
                         "parse_dflash_draft_config)"),
    "draft.trtllm_mha_ok": ("layer_types, num_hidden_layers, is_causal",
                            ("every layer of the draft is sliding attention, or the draft declares is_causal: true "
                             "(DFLASH keeps a trtllm_mha draft backend only then)")),
}

#: draft classes SGLang 0.5.23 promotes EAGLE / NEXTN to Frozen-KV MTP for (_resolve_speculative_algorithm_alias)
GEMMA4_ASSISTANTS = ("Gemma4AssistantForCausalLM", "Gemma4UnifiedAssistantForCausalLM")


def draft_facts(config: dict[str, Any] | None, origin: str) -> dict[str, tuple[Any, Origin]]:
    """``{fact: (value, origin)}`` for every draft fact; ``origin`` says where the config came from
    (or, with no config, why there is none)."""
    if config is None:
        return {name: (None, Origin("draft", "absent", origin)) for name in DRAFT_FACTS}
    if not isinstance(config, dict):
        raise InputError(f"the draft config must be a JSON object, not {type(config).__name__}")
    text: dict[str, Any] = config["text_config"] if isinstance(config.get("text_config"), dict) else config
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    dflash: dict[str, Any] = config["dflash_config"] if isinstance(config.get("dflash_config"), dict) else {}
    block = dflash.get("block_size", config.get("block_size"))
    block = engine_number(block, "draft config block_size") if isinstance(block, int) and not isinstance(block, bool) \
        else None
    layer_types = text.get("layer_types", config.get("layer_types"))
    layers = text.get("num_hidden_layers")
    all_sliding = (isinstance(layer_types, list) and bool(layer_types) and len(layer_types) == layers
                   and set(layer_types) == {"sliding_attention"})
    causal = text.get("is_causal") is True
    model_type = config.get("model_type") if isinstance(config.get("model_type"), str) else None
    return {"draft.architecture": (arch, Origin("draft", where=origin, field="architectures[0]")),
            "draft.model_type": (model_type, Origin("draft", where=origin, field="model_type")),
            "draft.block_size": (block, Origin("draft", where=origin, field="dflash_config.block_size or block_size")),
            "draft.trtllm_mha_ok": (all_sliding or causal,
                                    Origin("draft", where=origin, field="layer_types and is_causal"))}


def find_draft(path: Any) -> tuple[dict[str, Any] | None, str]:
    """The draft's config.json for ``--speculative-draft-model-path``, and where it came from; None
    (with the reason) when no local copy, cached copy or catalogue entry has it."""
    from .model_source import find_model

    if not isinstance(path, str) or not path.strip():
        return None, "no --speculative-draft-model-path given"
    try:
        found = find_model(path, what="--speculative-draft-model-path")
    except InputError:
        return None, f"no config found for --speculative-draft-model-path {path} (not read)"
    where = {"catalogue": f"{found.canonical_id} config (catalogue)", "hf-cache": f"{found.where} (Hugging Face cache)"}
    return found.config, where.get(found.origin, found.where)
