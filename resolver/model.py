"""Model facts: read from a Hugging Face ``config.json`` or from ``--model-arch``.

Only reading and naming happens here; what the facts mean (is it DSA? MLA?) is decided by
rules in ``rules/model.yaml``.  Nothing is downloaded.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import InputError
from .numbers import engine_number
from .provenance import Origin

__all__ = ["MODEL_FACTS", "model_facts"]

#: fact name -> (config.json field, meaning).  ``model.architecture`` is ``architectures[0]``.
MODEL_FACTS: dict[str, tuple[str, str]] = {
    "model.architecture": ("architectures[0]", "the model class SGLang dispatches on"),
    "model.model_type": ("model_type", "Hugging Face model type"),
    "model.index_topk": ("index_topk", "DSA indexer top-k (set only on DSA checkpoints)"),
    "model.index_kpool": ("index_kpool", "DSA index key pooling factor (pages are 64 x this on CUDA)"),
    "model.learnable_sink": ("learnable_sink", "learnable attention sinks"),
    "model.kv_lora_rank": ("kv_lora_rank", "MLA latent rank (set on MLA models)"),
    "model.num_attention_heads": ("num_attention_heads", "query heads"),
    "model.num_key_value_heads": ("num_key_value_heads", "KV heads"),
    "model.head_dim": ("head_dim", "attention head dimension"),
    "model.v_head_dim": ("v_head_dim", "value head dimension"),
    "model.qk_rope_head_dim": ("qk_rope_head_dim", "RoPE part of the MLA query/key head (0: a NoPE model)"),
    "model.from_arch_only": ("--model-arch", "true when only the architecture name was given"),
    "model.path": ("--model-path", "the --model-path as given (SGLang's model_path)"),
    "model.asymmetric_kv": ("head_dim, v_head_dim", "key and value head dimensions differ (both given and unequal)"),
    # read by SGLang 0.5.23's per-model overrides (rules/model_overrides*.yaml)
    "model.quant_method": ("quantization_config.quant_method",
                           "checkpoint quantization method as SGLang's ModelConfig names it (fp8, mxfp4, "
                           "compressed-tensors, ...); a ModelOpt checkpoint (quant_method modelopt, or none) is named "
                           "by its quant_algo: modelopt_fp4, modelopt_fp8, modelopt_mixed, w4afp8 or mxfp8"),
    "model.hf_quant_method": ("quantization_config.quant_method",
                              "the quantization method config.json itself names (as model.quant_method, but never "
                              "from hf_quant_config.json): what SGLang's per-model overrides read"),
    "model.quant_algo": ("quantization_config.quant_algo",
                         "ModelOpt quantization algorithm (NVFP4, FP8, MIXED_PRECISION, ...)"),
    "model.routed_experts_quant_method": ("quantization_config.routed_experts_quant_method",
                                          "format of the routed experts in a mixed checkpoint (mxfp4)"),
    "model.nvfp4_moe_meta": ("quantization_config.quant_algo, moe_quant_algo, group_size",
                             "a hybrid FP8 + NVFP4-experts checkpoint (MIXED_PRECISION with moe_quant_algo NVFP4 "
                             "and a group_size; SGLang's ModelConfig.nvfp4_moe_meta)"),
    "model.moe_w4a16_nvfp4": ("quantization_config.quantized_layers",
                              "a ModelOpt mixed-precision checkpoint stores an .experts layer as W4A16_NVFP4"),
    "model.int4_group32": ("quantization_config.config_groups.group_0.weights",
                           "compressed-tensors group_0 weights are 4-bit integers in groups of 32 (the Kimi K2 "
                           "Thinking / K2.5 int4 recipe)"),
    "model.hidden_act": ("hidden_act", "MLP activation"),
    "model.sliding_window": ("sliding_window", "sliding-window attention width"),
    "model.sliding_window_pattern": ("sliding_window_pattern", "interleaved sliding-window pattern (Exaone 4)"),
    "model.num_experts": ("num_experts, num_local_experts, n_routed_experts",
                          "routed experts per MoE layer (the first of these fields the config sets)"),
    "model.num_experts_per_tok": ("num_experts_per_tok", "experts each token is routed to"),
    "model.add_swa_attention_sink_bias": ("add_swa_attention_sink_bias",
                                          "attention sinks on sliding-window layers (MiMo V2)"),
    "model.add_full_attention_sink_bias": ("add_full_attention_sink_bias",
                                           "attention sinks on full-attention layers (MiMo V2)"),
    "model.has_mamba_layers": ("layer_types", "layer_types lists a mamba layer (hybrid Granite)"),
    "model.has_sliding_layers": ("layer_types", "layer_types lists a sliding_attention layer (gpt-oss, Gemma)"),
    "model.context_len": ("max_position_embeddings, rope_scaling.factor",
                          "context length as SGLang derives it (get_context_length; 2048 when no field says)"),
}
_COMPUTED = {"model.context_len", "model.architecture", "model.from_arch_only", "model.path", "model.asymmetric_kv",
             "model.num_experts", "model.has_mamba_layers", "model.has_sliding_layers", "model.quant_method",
             "model.hf_quant_method", "model.quant_algo", "model.routed_experts_quant_method", "model.nvfp4_moe_meta",
             "model.moe_w4a16_nvfp4", "model.int4_group32"}

#: facts only the per-model overrides read: a config that gives them another shape is not refused
_OVERRIDE_FACTS = {"model.quant_method", "model.hf_quant_method", "model.hidden_act", "model.sliding_window",
                   "model.sliding_window_pattern", "model.num_experts_per_tok", "model.add_swa_attention_sink_bias",
                   "model.add_full_attention_sink_bias"}

_BOOL_FIELDS = {"model.learnable_sink", "model.add_swa_attention_sink_bias", "model.add_full_attention_sink_bias"}


#: where multimodal configs (DeepseekVL2, Kimi-VL, Llava-style) keep the language model's fields
_NESTED = ("text_config", "language_config")


def _field(config: dict[str, Any], fieldname: str) -> tuple[Any, str] | None:
    """A config field and where it was found: the top level first, else the language model's part."""
    if "." in fieldname:  # a field of a nested object: quantization_config.quant_method
        head, _, rest = fieldname.partition(".")
        found = _field(config, head)
        if found is None or not isinstance(found[0], dict) or rest not in found[0]:
            return None
        return found[0][rest], f"{found[1]}.{rest}"
    if fieldname in config:
        return config[fieldname], fieldname
    for part in _NESTED:
        inner = config.get(part)
        if isinstance(inner, dict) and fieldname in inner:
            return inner[fieldname], f"{part}.{fieldname}"
    return None


def model_facts(config: dict[str, Any] | None = None, arch: str | None = None,
                source: str = "config.json", files: Mapping[str, Any] | None = None) -> dict[str, tuple[Any, Origin]]:
    """Model facts with their origins: ``{name: (value, origin)}``; ``source`` names the config in
    origins (a file is "config.json"; a catalogue entry says which model it is).  ``files`` holds the
    checkpoint's other files SGLang reads, by name (resolver.model_source.CHECKPOINT_FILES)."""
    if config is not None and arch is not None:
        raise InputError("give either a model config or a model architecture, not both")
    facts: dict[str, tuple[Any, Origin]] = {}
    if arch is not None:
        if not isinstance(arch, str) or not arch.strip():
            raise InputError("--model-arch needs a non-empty architecture name")
        facts["model.architecture"] = (arch.strip(), Origin("flag", where="--model-arch"))
        facts["model.from_arch_only"] = (True, Origin("flag", where="--model-arch"))
        facts["model.learnable_sink"] = (False, Origin("model", "absent", "--model-arch", "sinks"))
        return facts
    if config is None:
        return facts
    if not isinstance(config, dict):
        raise InputError(f"the model config must be a JSON object, not {type(config).__name__}")
    archs = config.get("architectures")
    if archs is not None:
        if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
            raise InputError("model config: 'architectures' must be a non-empty list of names")
        facts["model.architecture"] = (archs[0], _at(source, "architectures[0]"))
    facts["model.from_arch_only"] = (False, Origin("model", where=source))
    for name, (fieldname, _) in MODEL_FACTS.items():
        found = _field(config, fieldname)
        if name in _COMPUTED or found is None:
            continue
        value, where = found
        if value is not None and not isinstance(value, (str, int, float, bool)) and name in _OVERRIDE_FACTS:
            continue  # a shape the overrides do not read (a per-layer list, say): the fact stays unknown
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise InputError(f"model config: '{fieldname}' must be a scalar, got {type(value).__name__}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = engine_number(value, f"model config: '{fieldname}'")
        facts[name] = (value, _at(source, where))
    for name in _BOOL_FIELDS:
        value, origin = facts.get(name, (False, Origin("model", "absent", source, MODEL_FACTS[name][0])))
        facts[name] = (bool(value), origin)
    for fieldname in ("num_experts", "num_local_experts", "n_routed_experts"):
        found = _field(config, fieldname)
        if found is not None and isinstance(found[0], int) and not isinstance(found[0], bool):
            facts["model.num_experts"] = (engine_number(found[0], f"model config: '{fieldname}'"),
                                          _at(source, found[1]))
            break
    found = _field(config, "layer_types")
    if found is not None:
        layers, where = found
        if not isinstance(layers, list):
            layers = []
        facts["model.has_mamba_layers"] = ("mamba" in layers, _at(source, where))
        facts["model.has_sliding_layers"] = ("sliding_attention" in layers, _at(source, where))
    qc, where, read_from = _checkpoint_quantization(config, files or {}, source)
    facts.update(_quantization_facts(qc, where, read_from))
    # SGLang's per-model overrides read hf_config.quantization_config (utils/common.py get_quantization_config):
    # the method config.json names (ModelOpt's by its algorithm, as its config loader does), never
    # hf_quant_config.json beside it
    if read_from == source and "model.quant_method" in facts:
        facts["model.hf_quant_method"] = facts["model.quant_method"]
    facts["model.context_len"] = _context_len(config, source)
    head, v_head = ((_field(config, f) or (None,))[0] for f in ("head_dim", "v_head_dim"))
    facts["model.asymmetric_kv"] = (head is not None and v_head is not None and head != v_head,
                                    _at(source, "head_dim vs v_head_dim"))
    return facts


#: the config fields SGLang 0.5.23 reads a context length from, in its order (utils/hf_transformers/common.py)
_CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


def _at(source: str, field: str) -> Origin:
    """A fact read from ``field`` of the config ``source`` names."""
    return Origin("model", where=source, field=field)


def _context_len(config: dict[str, Any], source: str) -> tuple[Any, Origin]:
    """SGLang's get_context_length: the first context field times the RoPE scaling factor (1 for llama3
    scaling or when the original length is given), 2048 when no field says."""
    scaling = (_field(config, "rope_scaling") or (None,))[0]
    factor: Any = 1
    if isinstance(scaling, dict) and scaling:
        factor = scaling.get("factor", 1)
        if "original_max_position_embeddings" in scaling or scaling.get("rope_type") == "llama3":
            factor = 1
    for key in _CONTEXT_KEYS:
        found = _field(config, key)
        if found is not None and found[0] is not None:
            value, where = found
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not isinstance(factor, (int, float)) or isinstance(factor, bool):
                return None, _at(source, f"{where} (not a number)")
            return engine_number(int(factor * value), f"model config: '{key}'"), _at(source, where)
    return 2048, Origin("model", "absent", source, "context length field (SGLang's 2048)")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _modelopt_method(inner: dict[str, Any]) -> str | None:
    """The method SGLang 0.5.23's ModelConfig names a ModelOpt checkpoint by, from its quant_algo
    (configs/model_config.py _parse_modelopt_quant_config), or None when it names none."""
    algo = _text(inner.get("quant_algo"))
    if algo == "MIXED_PRECISION":
        layers = inner.get("quantized_layers")
        nvfp4 = isinstance(layers, dict) and any(
            isinstance(info, dict) and str(info.get("quant_algo", "")).upper() in ("NVFP4", "W4A16_NVFP4")
            for info in layers.values())
        return "modelopt_mixed" if nvfp4 else "w4afp8"
    if algo is not None and ("FP4" in algo or "NVFP4" in algo):
        return "modelopt_fp4"
    return {"FP8": "modelopt_fp8", "MXFP8": "mxfp8"}.get(algo or "")


def _checkpoint_quantization(config: dict[str, Any], files: Mapping[str, Any],
                             source: str) -> tuple[Any, str, str]:
    """The checkpoint's quantization config, where it was read, and the file it is in, as SGLang 0.5.23
    finds it (configs/model_config.py _parse_quant_hf_config): config.json's ``quantization_config``,
    else its ``compression_config``, else ModelOpt's ``hf_quant_config.json`` beside it."""
    for fieldname in ("quantization_config", "compression_config"):
        found = _field(config, fieldname)
        if found is not None and found[0] is not None:
            return found[0], found[1], source
    if files.get("hf_quant_config.json") is not None:
        return files["hf_quant_config.json"], "quantization", f"hf_quant_config.json beside {source}"
    return None, "", source


def _quantization_facts(qc: Any, where: str, source: str) -> dict[str, tuple[Any, Origin]]:
    """The facts of the checkpoint's quantization config ``qc`` (read at ``where`` of ``source``) that
    SGLang's quantization checks and MoE overrides read.  A shape they do not read (not an object, a
    list where a name is expected) leaves the fact unknown rather than refusing the config: only those
    checks and overrides would read it."""
    if not isinstance(qc, dict):
        return {}
    facts: dict[str, tuple[Any, Origin]] = {}
    # ModelOpt's hf_quant_config layout nests the fields under "quantization" (unwrap_modelopt_quantization_config)
    inner = qc.get("quantization", qc)
    inner = inner.get("quantization", inner) if isinstance(inner, dict) else {}
    inner = inner if isinstance(inner, dict) else {}
    method = qc.get("quant_method")
    if method is None or method == "modelopt":
        # SGLang names a ModelOpt checkpoint by its algorithm, in the config the overrides then read
        named = _modelopt_method(inner)
        if named is not None:
            facts["model.quant_method"] = (named, _at(source, f"{where}.quant_algo {inner.get('quant_algo')} "
                                                  f"(a ModelOpt checkpoint: SGLang names it {named})"))
    if "model.quant_method" not in facts and _text(method) is not None:
        facts["model.quant_method"] = (method, _at(source, f"{where}.quant_method"))
    if _text(inner.get("quant_algo")) is not None:
        facts["model.quant_algo"] = (inner["quant_algo"], _at(source, f"{where}.quant_algo"))
    if _text(qc.get("routed_experts_quant_method")) is not None:
        facts["model.routed_experts_quant_method"] = (qc["routed_experts_quant_method"],
                                                      _at(source, f"{where}.routed_experts_quant_method"))
    facts["model.nvfp4_moe_meta"] = (
        str(qc.get("quant_algo", "")).upper() == "MIXED_PRECISION"
        and str(qc.get("moe_quant_algo", "")).upper() == "NVFP4"
        and qc.get("group_size") is not None, _at(source, f"{where}.quant_algo, moe_quant_algo, group_size"))
    layers = qc.get("quantized_layers")
    facts["model.moe_w4a16_nvfp4"] = (
        isinstance(layers, dict) and any(".experts" in name and isinstance(info, dict)
                                         and str(info.get("quant_algo", "")).upper() == "W4A16_NVFP4"
                                         for name, info in layers.items()),
        _at(source, f"{where}.quantized_layers"))
    groups = qc.get("config_groups")
    group0 = groups.get("group_0") if isinstance(groups, dict) else None
    weights = group0.get("weights") if isinstance(group0, dict) else None
    weights = weights if isinstance(weights, dict) else {}
    facts["model.int4_group32"] = (
        weights.get("num_bits") == 4 and weights.get("group_size") == 32 and weights.get("strategy") == "group"
        and weights.get("type") == "int", _at(source, f"{where}.config_groups.group_0.weights"))
    return facts
