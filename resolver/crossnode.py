"""The cross-node check: do the servers of one deployment agree on what must match between them?

A deployment is given as roles (name -> request, in the batch format), one per server or node:
a PD layout (``disaggregation_mode`` prefill / decode: one or more prefill servers handing their KV
cache to one or more decode servers) or a multi-node layout (every role ``null``: the nodes of one
server).  Each role is resolved with the shipped engine; if a role conflicts, that is reported per
role and nothing is compared.  Otherwise the roles' resolved values are compared with what SGLang
0.5.23's PD transfer and multi-node launch need to match (each :class:`Check` cites the SGLang code
that checks or assumes it), and every mismatch comes with fixes on either side, each checked by
resolving the changed role(s) again: a fix that does not resolve, or leaves the mismatch, is
dropped (and listed as not offered, with the reason).

Values are read by name from each role's resolved ``values`` (so options that other rule files add
later are read the same way); a field no rule reads comes from what the role typed, else SGLang's
default (``disaggregation_transfer_backend``: ``mooncake``).  Model facts (architecture, layers,
KV layout) come from the role's model config.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .catalogue import catalogue
from .core import Engine, Resolution, resolve
from .errors import InputError, ResolverError
from .launch import LaunchRequest
from .options import to_argv
from .outcome import show_value
from .wording import origin_text

__all__ = ["CHECKS", "COMPARED", "Change", "Check", "CrossFix", "CrossNodeResult", "Mismatch", "Notice", "RoleSpec",
           "RoleValue", "check_roles", "flag_of", "role_from_request"]

#: the most roles one check takes (each is a resolution, and each fix another)
MAX_ROLES = 64
_SGLANG = "python/sglang/srt/"  # SGLang 0.5.23's source tree, as paths below are written
_CONN = _SGLANG + "disaggregation/common/conn.py"


@dataclass(frozen=True)
class Check:
    """One thing the roles must agree on, and where SGLang checks or assumes it."""

    id: str
    field: str  # the value compared: a ServerArgs field, or model.* (from the model config)
    what: str  # in words
    evidence: str  # SGLang 0.5.23 file and function, and what it does


CHECKS: dict[str, Check] = {c.id: c for c in (
    # -- a PD layout: every prefill and decode server
    Check("pd-modes", "disaggregation_mode", "the roles' PD modes",
          f"{_SGLANG}managers/disagg_service.py start_disagg_service: only a prefill server starts the KV bootstrap "
          "server that decode servers register with and pull KV through; a server in mode null takes no part in PD"),
    Check("kv-cache-dtype", "kv_cache_dtype", "the KV-cache dtype",
          f"{_CONN} CommonKVManager.try_ensure_parallel_info: raises 'KV cache dtype mismatch ... Both servers must "
          "use the same --kv-cache-dtype value' (it compares the strings: auto and bfloat16 differ)"),
    Check("model-dtype", "model.dtype", "the model dtype (the KV-cache dtype under --kv-cache-dtype auto)",
          f"{_SGLANG}mem_cache/kv_cache_dtype.py configure_kv_cache_dtype: with kv_cache_dtype auto the KV cache takes "
          "the model dtype; the PD check compares only the string 'auto', so different --dtype values pass it and the "
          "bytes sent no longer mean the same"),
    Check("page-size", "page_size", "the KV page size",
          f"{_CONN} CommonKVManager.try_ensure_parallel_info: raises 'Page size mismatch ... Both servers must use the "
          "same --page-size value'"),
    Check("transfer-backend", "disaggregation_transfer_backend", "the KV transfer backend",
          f"{_SGLANG}disaggregation/utils.py get_kv_class (and managers/disagg_service.py start_disagg_service): each "
          "server builds the KV manager, sender, receiver and bootstrap server of its own "
          "--disaggregation-transfer-backend; a decode receiver speaks only its backend's protocol to the prefill's "
          "bootstrap server (mooncake_tcp is Mooncake with MC_FORCE_TCP=1, arg_groups/pd_disaggregation_hook.py "
          "handle_pd_disaggregation: a TCP transport on one side only)"),
    Check("model-architecture", "model.architecture", "the model architecture",
          f"{_SGLANG}disaggregation/prefill.py and decode.py: the decode server writes the KV pages it receives into "
          "its own model's pool layer by layer (kv_args from its own model runner); nothing checks that the models "
          "are the same"),
    Check("model-layers", "model.num_hidden_layers", "the number of layers",
          f"{_CONN} CommonKVManager: KV buffers are registered per layer (kv_data_ptrs, kv_item_lens); a different "
          "layer count pairs the wrong layers or runs past the pool"),
    Check("kv-layout", "model.kv_layout", "the KV layout (MLA latent and RoPE dims, or KV heads x head dim)",
          f"{_CONN} CommonKVManager: MLA pools are replicated across attention TP (is_mla_backend) while MHA pools are "
          "sliced by KV head; the page item length (kv_item_lens) follows these dims on both sides"),
    Check("attn-tp-ratio", "attn_tp_size", "the attention TP sizes (one must divide the other)",
          f"{_CONN} CommonKVManager._resolve_rank_mapping: different prefill and decode attention TP sizes are "
          "supported (Mooncake, NIXL and Mori slice or replicate the KV), but the rank mapping divides one size by the "
          "other, so the larger must be a multiple of the smaller"),
    Check("attn-tp-equal", "attn_tp_size", "equal attention TP sizes (this launch needs them)",
          f"{_CONN} CommonKVManager.try_ensure_parallel_info and _resolve_rank_mapping: an MXFP8 KV cache of a non-MLA "
          "model, MiniMax sparse attention, and MLA KV sharding on the prefill (--enable-kv-cache-sharding) all "
          "require equal attention TP sizes"),
    Check("pp-size", "pp_size", "the pipeline sizes (decode pp equal to prefill pp, or 1)",
          f"{_CONN} CommonKVManager._resolve_rank_mapping: asserts 'Decode pp size should be equal to prefill pp size "
          "or 1'"),
    Check("decode-attn-cp", "attn_cp_size", "the decode server's attention CP size (must be 1)",
          f"{_CONN} CommonKVManager._resolve_rank_mapping: asserts 'Decode cp size should be equal to 1'"),
    Check("decode-dcp", "dcp_size", "decode context parallelism against the prefill's layout",
          f"{_CONN} CommonKVManager.try_ensure_parallel_info: 'PD decode DCP currently requires prefill attention "
          "CP=1' and 'does not support a prefill with --enable-kv-cache-sharding'"),
    # -- the nodes of one server (--nnodes > 1)
    Check("nodes-parallel", "tp_size, pp_size, nnodes, dp_size, enable_dp_attention",
          "the parallel layout every node computes its ranks from",
          f"{_SGLANG}entrypoints/engine.py _calculate_rank_ranges: each node derives its TP and PP rank ranges from "
          "its own tp_size, pp_size, nnodes and node_rank; nodes that disagree leave ranks missing or doubled and the "
          "process group never forms"),
    Check("nodes-dist-init-addr", "dist_init_addr", "the rendezvous address (--dist-init-addr)",
          f"{_SGLANG}entrypoints/engine.py: the nodes of one server meet at --dist-init-addr (torch.distributed "
          "init_method); nodes given different addresses wait for each other forever"),
    Check("nodes-node-rank", "node_rank", "distinct node ranks in [0, nnodes)",
          f"{_SGLANG}entrypoints/engine.py _calculate_rank_ranges: node_rank picks the node's slice of the ranks"),
    Check("nodes-model", "kv_cache_dtype, page_size, dtype, model",
          "the model and KV cache of one model instance split across nodes",
          f"{_SGLANG}managers/scheduler.py: the TP ranks of one server run one model, in lock step (the same batches "
          "and KV page allocation on every rank), so they need the same model, KV dtype and page size"),
)}

#: every field some check reads, as the JSON shows each role's values
COMPARED = ("disaggregation_mode", "kv_cache_dtype", "dtype", "page_size", "disaggregation_transfer_backend",
            "model.dtype", "model.architecture", "model.num_hidden_layers", "model.kv_layout", "tp_size",
            "attn_dp_size", "attn_cp_size", "attn_tp_size", "pp_size", "dcp_size", "enable_kv_cache_sharding",
            "nnodes", "node_rank", "dist_init_addr", "dp_size", "enable_dp_attention")
#: the fields every role of a PD layout must agree on (all pairs)
_PD_EQUAL = ("kv-cache-dtype", "page-size", "transfer-backend", "model-architecture", "model-layers", "kv-layout")
#: the fields the nodes of one server must agree on, by check
_NODE_EQUAL = {"nodes-parallel": ("tp_size", "pp_size", "nnodes", "dp_size", "enable_dp_attention"),
               "nodes-dist-init-addr": ("dist_init_addr",),
               "nodes-model": ("kv_cache_dtype", "page_size", "model.dtype", "model.architecture",
                               "model.num_hidden_layers", "model.kv_layout")}


@dataclass(frozen=True)
class RoleSpec:
    """One role: a name and its launch."""

    name: str
    launch: LaunchRequest

    @property
    def args(self) -> dict[str, Any]:
        return dict(self.launch.args)

    def changed(self, set_: Mapping[str, Any], unset: tuple[str, ...] = (),
                model_from: RoleSpec | None = None) -> RoleSpec:
        """This role with options set or removed (and, with ``model_from``, that role's model)."""
        gone = (*unset, *(k for k, v in set_.items() if v is None))
        launch = self.launch.changed({k: v for k, v in set_.items() if v is not None}, gone)
        if model_from is not None:
            source = model_from.launch
            path = {"model_path": source.args["model_path"]} if "model_path" in source.args else {}
            launch = launch.changed(path, ("model_path",), model=source.model, model_arch=source.model_arch)
        return RoleSpec(self.name, launch)

    def resolve(self, engine: Engine, fixes: bool = True) -> Resolution:
        return resolve(engine, self.launch, fixes=fixes)


@dataclass(frozen=True)
class RoleValue:
    """One role's value of a compared field, and where it came from."""

    role: str
    value: Any
    source: str  # user | default | adjustment | fallback | computed | sglang-default | model
    origin: str  # the flag typed, the rule (id and file:line), or the model config field
    rule: dict[str, Any] | None = None  # {id, file, line} when a rule decided it

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "value": self.value, "source": self.source, "origin": self.origin, "rule": self.rule}


@dataclass(frozen=True)
class Change:
    """What a fix changes on one role: options set or removed, or the model of another role."""

    role: str
    set: dict[str, Any]
    unset: tuple[str, ...] = ()
    model_from: str | None = None  # take this role's model (--model-path / --model-config / --model-arch)
    argv: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "set": dict(self.set), "unset": list(self.unset), "model_from": self.model_from,
                "argv": list(self.argv)}


@dataclass(frozen=True)
class CrossFix:
    """A fix for one mismatch, checked: the changed roles resolve again and the mismatch is gone.
    ``effects`` are the other values the change moves on each changed role (name -> [before, after])."""

    description: str
    changes: tuple[Change, ...]
    effects: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    also_breaks: tuple[str, ...] = ()  # checks that agreed before the fix and do not after it

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.description, "changes": [c.to_dict() for c in self.changes],
                "effects": self.effects, "also_breaks": list(self.also_breaks)}


@dataclass(frozen=True)
class Mismatch:
    """Roles that disagree on something that must match."""

    check: str  # a CHECKS id
    field: str
    message: str
    values: tuple[RoleValue, ...]
    fixes: tuple[CrossFix, ...] = ()
    not_offered: tuple[dict[str, str], ...] = ()  # candidate fixes dropped: {description, reason}

    @property
    def key(self) -> tuple:
        return (self.check, self.field, tuple(sorted(v.role for v in self.values)))

    def to_dict(self) -> dict[str, Any]:
        c = CHECKS[self.check]
        return {"check": self.check, "field": self.field, "what": c.what, "message": self.message,
                "evidence": c.evidence, "values": [v.to_dict() for v in self.values],
                "fixes": [f.to_dict() for f in self.fixes], "not_offered": list(self.not_offered)}


@dataclass(frozen=True)
class Notice:
    """Something worth knowing that SGLang accepts (a warning it logs, an unchecked assumption)."""

    code: str
    message: str
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "evidence": self.evidence}


@dataclass
class CrossNodeResult:
    """The roles' resolutions and what they disagree on."""

    layout: str  # pd | multi-node
    roles: dict[str, Resolution]
    mismatches: tuple[Mismatch, ...]
    notices: tuple[Notice, ...]
    checked: tuple[str, ...]  # the CHECKS ids that applied to this layout
    #: role -> the compared values (fields of COMPARED), when every role resolved
    compared: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def conflicting(self) -> tuple[str, ...]:
        return tuple(n for n, r in self.roles.items() if r.conflicts)

    @property
    def status(self) -> str:
        return "conflict" if self.conflicting else "mismatch" if self.mismatches else "agree"

    @property
    def ok(self) -> bool:
        return self.status == "agree"

    def to_dict(self) -> dict[str, Any]:
        roles = {}
        for name, res in self.roles.items():
            row: dict[str, Any] = {"status": res.status, "platform": res.request.platform.name,
                                   "platform_source": res.request.platform_source,
                                   "disaggregation_mode": res.values.get("disaggregation_mode"),
                                   "warnings": [w.code for w in res.warnings]}
            if name in self.compared:
                row["values"] = self.compared[name]
            if res.conflicts:
                row["conflicts"] = [c.to_dict() for c in res.conflicts]
            roles[name] = row
        return {"status": self.status, "layout": self.layout, "roles": roles,
                "mismatches": [m.to_dict() for m in self.mismatches],
                "notices": [n.to_dict() for n in self.notices],
                "checked": [{"check": c, "what": CHECKS[c].what, "evidence": CHECKS[c].evidence} for c in self.checked]}


# -- reading the roles' values -----------------------------------------------------------------------------------

class _View:
    """One role's resolution, read by field name (options, other SGLang fields, model facts)."""

    def __init__(self, spec: RoleSpec, res: Resolution):
        self.spec, self.res = spec, res
        self._model = _model_layout(spec, res)
        self._config = _raw_config(spec)[0]

    def _model_dtype(self) -> RoleValue:
        typed = self.read("dtype")
        value, how = _effective_dtype(typed.value, self._config)
        origin = f"typed ({how})" if typed.source == "user" else how
        return RoleValue(self.name, value, typed.source, origin, typed.rule)

    @property
    def name(self) -> str:
        return self.spec.name

    def value(self, name: str) -> Any:
        return self.read(name).value

    def read(self, name: str) -> RoleValue:
        res = self.res
        if name in self._model:
            value, origin = self._model[name]
            return RoleValue(self.name, value, "model", origin)
        if name == "model.dtype":
            return self._model_dtype()
        if name == "attn_tp_size":
            tp, dp, cp = (self.value(n) for n in ("tp_size", "attn_dp_size", "attn_cp_size"))
            dp = dp if isinstance(dp, int) and dp > 0 else 1
            return RoleValue(self.name, _attn_tp(tp, dp, cp), "computed",
                             f"tp_size {tp} // attn_dp_size {dp} // attn_cp_size {cp} "
                             "(runtime_context.derive_attn_tp_size)")
        d = res.derivations.get(name)
        if d is not None:
            rule = d.rule.to_dict() if d.rule is not None else None
            if d.source == "user":
                origin = f"typed ({(res.request.flags or {}).get(name) or res.pack.options[name].flag})"
            elif d.source == "adjustment" and d.adjustments:
                origin = f"{show_value(d.adjustments[0].old)} adjusted by {d.rule}"
            elif d.source == "fallback":
                origin = f"SGLang's default, {d.rule}"
            else:
                origin = f"{d.source} rule {d.rule}" if d.rule else d.source
            return RoleValue(self.name, d.value, d.source, origin, rule)
        if name in res.request.unchecked:
            flag = (res.request.flags or {}).get(name) or flag_of(name)
            return RoleValue(self.name, res.request.unchecked[name], "user", f"typed ({flag})")
        if name in res.values:
            return RoleValue(self.name, res.values[name], "computed", "the resolution")
        default = catalogue().default(name) if name in catalogue().by_dest else None
        return RoleValue(self.name, default, "sglang-default", f"SGLang 0.5.23's default of {flag_of(name)}")


_DTYPES = {"half": "float16", "float16": "float16", "float": "float32", "float32": "float32", "bfloat16": "bfloat16"}


def _effective_dtype(typed: Any, config: dict[str, Any] | None) -> tuple[str | None, str]:
    """The model dtype SGLang runs (configs/model_config.py _get_and_verify_dtype), and how it was found."""
    if isinstance(typed, str) and typed.lower() != "auto":
        return _DTYPES.get(typed.lower(), typed), f"--dtype {typed}"
    if config is None:
        return None, "--dtype auto with no config: unknown"
    raw = config.get("dtype") or config.get("torch_dtype")
    found = _DTYPES.get(raw) if isinstance(raw, str) else None
    if found is None or found == "float32":
        model_type = str(config.get("model_type", ""))
        # SGLang: a float32 (or unknown) checkpoint runs float16, bfloat16 for Gemma
        return ("bfloat16" if model_type.startswith("gemma") else "float16"), f"--dtype auto, config dtype {raw}"
    return found, f"--dtype auto: the config's torch_dtype {raw}"


def _attn_tp(tp: Any, dp: int, cp: Any) -> int | None:
    if not all(isinstance(x, int) and x > 0 for x in (tp, cp)):
        return None
    return tp // dp // cp


def flag_of(name: str) -> str:
    action = catalogue().by_dest.get(name)
    return action.flags[0] if action is not None else "--" + name.replace("_", "-")


def _raw_config(spec: RoleSpec) -> tuple[dict[str, Any] | None, str]:
    """The config.json the role resolved with (as resolver.api._model finds it), and what it is."""
    from .model_source import find_model, read_checkpoint, representative

    model, arch, path = spec.launch.model, spec.launch.model_arch, spec.args.get("model_path")
    if isinstance(model, str):
        return read_checkpoint(model, "--model-config").config, model
    if isinstance(model, dict):
        return model, "the model config given"
    if arch is None and isinstance(path, str):
        found = find_model(path)
        return found.config, found.canonical_id or found.where
    if isinstance(arch, str) and representative(arch.strip()) is not None:
        entry = representative(arch.strip())
        assert entry is not None  # tested just above
        return entry.config, f"{entry.canonical_id} (representative of {arch})"
    return None, f"--model-arch {arch}" if arch else "no model given"


def _config_field(config: dict[str, Any], name: str) -> Any:
    for part in (config, config.get("text_config"), config.get("language_config")):
        if isinstance(part, dict) and name in part:
            return part[name]
    return None


def _model_layout(spec: RoleSpec, res: Resolution) -> dict[str, tuple[Any, str]]:
    """model.* values: architecture (the resolution's fact), layers and KV layout (from the config)."""
    facts = res.outcome.facts
    arch = facts.get("model.architecture")
    out: dict[str, tuple[Any, str]] = {"model.architecture": (arch.value if arch else None,
                                                              origin_text(arch.origin) if arch else "no model given")}
    config, what = _raw_config(spec)
    if config is None:
        out["model.num_hidden_layers"] = (None, f"{what}: no config, unknown")
        out["model.kv_layout"] = (None, f"{what}: no config, unknown")
        return out
    layers = _config_field(config, "num_hidden_layers")
    out["model.num_hidden_layers"] = (layers, f"{what} num_hidden_layers")
    mla = facts.get("model.mla")
    if mla is not None and mla.value:
        layout = (f"MLA kv_lora_rank={_config_field(config, 'kv_lora_rank')} "
                  f"qk_rope_head_dim={_config_field(config, 'qk_rope_head_dim')}")
        out["model.kv_layout"] = (layout,
                                  f"{what} kv_lora_rank, qk_rope_head_dim (model.mla: {origin_text(mla.origin)})")
    else:
        heads, kv_heads = _config_field(config, "num_attention_heads"), _config_field(config, "num_key_value_heads")
        head_dim, hidden = _config_field(config, "head_dim"), _config_field(config, "hidden_size")
        if head_dim is None and isinstance(hidden, int) and isinstance(heads, int) and heads:
            head_dim = hidden // heads
        kv_heads = kv_heads if kv_heads is not None else heads
        mha = f"MHA kv_heads={kv_heads} head_dim={head_dim}" if kv_heads is not None or head_dim is not None else None
        out["model.kv_layout"] = (mha, f"{what} num_key_value_heads, head_dim")
    if isinstance(spec.args.get("model_path"), str):
        out["model_path"] = (spec.args["model_path"], "typed (--model-path)")
    return out


# -- comparing ---------------------------------------------------------------------------------------------------

def _mode(v: _View) -> str:
    mode = v.value("disaggregation_mode")
    return mode if mode in ("prefill", "decode") else "null"


def _layout(views: list[_View]) -> str:
    return "multi-node" if all(_mode(v) == "null" for v in views) else "pd"


def _node_groups(views: list[_View], layout: str) -> list[list[_View]]:
    """The nodes of one server: every role of a multi-node layout; in a PD layout, roles of one mode with
    --nnodes > 1 and the same --dist-init-addr."""
    if layout == "multi-node":
        return [views] if len(views) > 1 else []
    groups: dict[tuple, list[_View]] = {}
    for v in views:
        nnodes = v.value("nnodes")
        if isinstance(nnodes, int) and nnodes > 1:
            groups.setdefault((_mode(v), v.value("dist_init_addr")), []).append(v)
    return [g for g in groups.values() if len(g) > 1]


def _equal(check: str, fieldname: str, views: list[_View]) -> Mismatch | None:
    values = [v.read(fieldname) for v in views]
    if (len({repr(x.value) for x in values}) <= 1
            or any(x.value is None for x in values) and fieldname.startswith("model.")):
        return None
    shown = ", ".join(f"{x.role} {show_value(x.value)}" for x in values)
    label = CHECKS[check].what if check in _PD_EQUAL or check == "model-dtype" else fieldname
    return Mismatch(check, fieldname, f"{label} differs: {shown}", tuple(values))


def _compare(views: list[_View]) -> tuple[str, list[Mismatch], list[Notice], list[str]]:
    """The layout, its mismatches, notices, and the checks that applied."""
    layout = _layout(views)
    mismatches: list[Mismatch] = []
    notices: list[Notice] = []
    checked: list[str] = []
    if layout == "pd":
        checked += ["pd-modes", *_PD_EQUAL, "model-dtype", "attn-tp-ratio", "attn-tp-equal", "pp-size",
                    "decode-attn-cp", "decode-dcp"]
        modes = {v.name: _mode(v) for v in views}
        prefill = [v for v in views if modes[v.name] == "prefill"]
        decode = [v for v in views if modes[v.name] == "decode"]
        nulls = [v for v in views if modes[v.name] == "null"]
        if nulls or not prefill or not decode:
            problems = ([f"{', '.join(v.name for v in nulls)} not in PD mode (disaggregation_mode null)"]
                        if nulls else [])
            problems += ([] if prefill else ["no prefill server"]) + ([] if decode else ["no decode server"])
            mismatches.append(Mismatch("pd-modes", "disaggregation_mode",
                                       "a PD layout needs at least one prefill and one decode server and no server "
                                       f"outside PD: {'; '.join(problems)}",
                                       tuple(v.read("disaggregation_mode") for v in views)))
        for check in _PD_EQUAL:
            if check in ("model-layers", "kv-layout") and _arch_differs(mismatches):
                continue  # another architecture differs in everything: said once
            found = _equal(check, CHECKS[check].field, views)
            if found is not None:
                mismatches.append(found)
        if all(v.value("kv_cache_dtype") == "auto" for v in views):
            found = _equal("model-dtype", "model.dtype", views)
            if found is not None:
                mismatches.append(found)
        for p in prefill:
            for d in decode:
                _pair(p, d, mismatches, notices)
        if not any(m.field.startswith("model.") for m in mismatches):
            _model_path_notice(views, notices)
    for group in _node_groups(views, layout):
        checked += [c for c in ("nodes-parallel", "nodes-dist-init-addr", "nodes-node-rank", "nodes-model")
                    if c not in checked]
        for check, fields in _NODE_EQUAL.items():
            for name in fields:
                if name in ("model.num_hidden_layers", "model.kv_layout") and _arch_differs(mismatches):
                    continue
                found = _equal(check, name, group)
                if found is not None:
                    mismatches.append(found)
        _node_ranks(group, mismatches, notices)
        if layout == "multi-node" and not any(m.field.startswith("model.") for m in mismatches):
            _model_path_notice(group, notices)
        platforms = sorted({v.res.request.platform.name for v in group})
        if len(platforms) > 1:
            notices.append(Notice("nodes-mixed-gpus", f"the nodes of one server run on different GPUs "
                                  f"({', '.join(platforms)}): each resolves its own kernels, and SGLang does not check "
                                  "that they agree", CHECKS["nodes-model"].evidence))
    if layout == "multi-node" and len(views) == 1:
        checked.append("nodes-node-rank")
        _node_ranks(views, mismatches, notices)
    return layout, _unique(mismatches), notices, checked


def _arch_differs(mismatches: list[Mismatch]) -> bool:
    return any(m.field == "model.architecture" for m in mismatches)


def _unique(mismatches: list[Mismatch]) -> list[Mismatch]:
    seen: set[tuple] = set()
    out = []
    for m in mismatches:
        if m.key not in seen:
            seen.add(m.key)
            out.append(m)
    return out


def _pair(p: _View, d: _View, mismatches: list[Mismatch], notices: list[Notice]) -> None:
    """What one prefill and one decode server must agree on beyond equal values."""
    backend = d.value("disaggregation_transfer_backend")
    ptp, dtp = p.read("attn_tp_size"), d.read("attn_tp_size")
    mla = bool(d.res.outcome.facts.get("model.mla") and d.res.outcome.facts["model.mla"].value)
    if ptp.value != dtp.value and isinstance(ptp.value, int) and isinstance(dtp.value, int) and backend != "fake":
        small, large = sorted((ptp.value, dtp.value))
        warn_slicing = True
        if large % small:
            warn_slicing = False
            mismatches.append(Mismatch("attn-tp-ratio", "attn_tp_size",
                                       f"attention TP sizes {p.name} {ptp.value} and {d.name} {dtp.value}: {large} is "
                                       "not "
                                       f"a multiple of {small}", (ptp, dtp)))
        needs_equal = []
        if d.value("kv_cache_dtype") == "mxfp8" and not mla:
            needs_equal.append("an MXFP8 KV cache of a non-MLA model")
        if p.res.outcome.facts.get("model.minimax_m3_sparse") and p.res.outcome.facts["model.minimax_m3_sparse"].value:
            needs_equal.append("MiniMax sparse attention")
        if mla and p.value("enable_kv_cache_sharding") and p.value("attn_cp_size") == 1:
            needs_equal.append(f"MLA KV sharding on {p.name} (--enable-kv-cache-sharding)")
        if needs_equal:
            mismatches.append(Mismatch("attn-tp-equal", "attn_tp_size",
                                       f"attention TP sizes {p.name} {ptp.value} and {d.name} {dtp.value} differ, but "
                                       f"{' and '.join(needs_equal)} needs them equal", (ptp, dtp)))
        elif not mla and warn_slicing:
            notices.append(Notice("pd-tp-performance", f"{p.name} and {d.name} use different attention TP sizes "
                                  f"({ptp.value}, {dtp.value}) with a non-MLA model: SGLang transfers sliced KV heads "
                                  "and warns 'Performance is NOT guaranteed when using different TP sizes for non-MLA "
                                  "models'", f"{_CONN} CommonKVManager._resolve_rank_mapping"))
    ppp, dpp = p.read("pp_size"), d.read("pp_size")
    if dpp.value not in (ppp.value, 1):
        mismatches.append(Mismatch("pp-size", "pp_size", f"{d.name} pp_size {dpp.value} is neither {p.name}'s "
                                   f"pp_size {ppp.value} nor 1", (ppp, dpp)))
    dcp = d.read("attn_cp_size")
    if dcp.value not in (1, None):
        mismatches.append(Mismatch("decode-attn-cp", "attn_cp_size",
                                   f"{d.name} attn_cp_size is {dcp.value}; a decode server's must be 1", (dcp,)))
    ddcp = d.read("dcp_size")
    if isinstance(ddcp.value, int) and ddcp.value > 1:
        pcp, shard = p.read("attn_cp_size"), p.read("enable_kv_cache_sharding")
        if pcp.value != 1:
            mismatches.append(Mismatch("decode-dcp", "attn_cp_size",
                                       f"{d.name} runs DCP (dcp_size {ddcp.value}), which needs {p.name}'s "
                                       f"attn_cp_size 1, got {pcp.value}", (ddcp, pcp)))
        if shard.value:
            mismatches.append(Mismatch("decode-dcp", "enable_kv_cache_sharding",
                                       f"{d.name} runs DCP (dcp_size {ddcp.value}), which does not take {p.name}'s "
                                       "--enable-kv-cache-sharding", (ddcp, shard)))


def _model_path_notice(views: list[_View], notices: list[Notice]) -> None:
    paths = {v.name: v.spec.args.get("model_path") for v in views if isinstance(v.spec.args.get("model_path"), str)}
    if len(set(paths.values())) > 1:
        notices.append(Notice("model-path-differs", "the roles name different model paths ("
                              + ", ".join(f"{n} {p}" for n, p in paths.items()) + "): their configs agree on the KV "
                              "layout, but the KV cache only means the same if the weights are the same checkpoint",
                              CHECKS["model-architecture"].evidence))


def _node_ranks(group: list[_View], mismatches: list[Mismatch], notices: list[Notice]) -> None:
    ranks = [v.read("node_rank") for v in group]
    nnodes = max((v.value("nnodes") for v in group if isinstance(v.value("nnodes"), int)), default=1)
    seen: dict[Any, str] = {}
    for r in ranks:
        if r.value in seen:
            mismatches.append(Mismatch("nodes-node-rank", "node_rank", f"{seen[r.value]} and {r.role} both have "
                                       f"node_rank {r.value}", tuple(x for x in ranks if x.value == r.value)))
        seen.setdefault(r.value, r.role)
        if isinstance(r.value, int) and not 0 <= r.value < nnodes:
            mismatches.append(Mismatch("nodes-node-rank", "node_rank", f"{r.role} has node_rank {r.value}, outside "
                                       f"[0, {nnodes}) for --nnodes {nnodes}", (r,)))
    missing = sorted(set(range(nnodes)) - set(seen))
    if missing and len(group) < nnodes:
        notices.append(Notice("nodes-missing", f"--nnodes {nnodes} but no role has node_rank "
                              f"{', '.join(map(str, missing))}: those nodes were not checked",
                              CHECKS["nodes-node-rank"].evidence))


# -- fixes -------------------------------------------------------------------------------------------------------

def _candidates(m: Mismatch, views: dict[str, _View]) -> list[tuple[str, tuple[Change, ...]]]:
    """Changes that could mend a mismatch, smallest first: align every role to one role's value (each
    value in turn), or the check's own repair."""
    out: list[tuple[str, tuple[Change, ...]]] = []
    by_role = {v.role: v for v in m.values}
    if m.check == "nodes-node-rank":
        used = {views[n].value("node_rank") for n in views}
        nnodes = max((v.value("nnodes") for v in views.values() if isinstance(v.value("nnodes"), int)), default=1)
        free = [r for r in range(nnodes) if r not in used]
        for rv in m.values[1:] if len(m.values) > 1 else m.values:
            for r in free[:1]:
                out.append((f"{rv.role}: --node-rank {r}", (Change(rv.role, {"node_rank": r}),)))
        return out
    if m.check == "pd-modes":
        for v in views.values():
            for mode in ("prefill", "decode"):
                if _mode(v) != mode:
                    out.append((f"{v.name}: --disaggregation-mode {mode}",
                                (Change(v.name, {"disaggregation_mode": mode}),)))
        return out
    if m.check == "decode-attn-cp":
        (rv,) = m.values
        only: tuple[Change, ...] = (Change(rv.role, {}, ("attn_cp_size",)),)
        return [(f"{rv.role}: --attn-cp-size 1", only)]
    if m.check == "decode-dcp":
        d, p = m.values[0].role, m.values[1].role
        fixes: list[tuple[str, tuple[Change, ...]]] = [(f"{d}: omit --dcp-size", (Change(d, {}, ("dcp_size",)),))]
        fixes.append((f"{p}: omit {flag_of(m.field)}", (Change(p, {}, (m.field,)),)))
        return fixes
    if m.field == "attn_tp_size":  # align the TP sizes, one side or the other
        for target in m.values:
            source = [v for v in m.values if v.role != target.role]
            changes = tuple(Change(s.role, {"tp_size": views[target.role].value("tp_size")}) for s in source)
            names = ", ".join(c.role for c in changes)
            out.append((f"{names}: --tp-size {views[target.role].value('tp_size')} (as {target.role})", changes))
        return out
    if m.check == "model-dtype":
        for target in m.values:
            others = [v for v in m.values if v.value != target.value]
            typed = [o for o in others if o.role in views and "dtype" in views[o.role].spec.args]
            if typed and len(typed) == len(others):
                out.append((f"{', '.join(o.role for o in others)}: omit --dtype",
                            tuple(Change(o.role, {}, ("dtype",)) for o in others)))
            out.append((f"{', '.join(o.role for o in others)}: --dtype {target.value} (as {target.role})",
                        tuple(Change(o.role, {"dtype": target.value}) for o in others)))
        return out
    if m.field == "pp_size":
        pre, dec = m.values
        return [(f"{dec.role}: --pp-size {pre.value} (as {pre.role})", (Change(dec.role, {"pp_size": pre.value}),)),
                (f"{dec.role}: --pp-size 1", (Change(dec.role, {"pp_size": 1}),)),
                (f"{pre.role}: --pp-size {dec.value} (as {dec.role})", (Change(pre.role, {"pp_size": dec.value}),))]
    seen_values: list[str] = []
    for target in m.values:  # make every other role take this role's value
        if repr(target.value) in seen_values:
            continue
        seen_values.append(repr(target.value))
        others = [v for v in m.values if repr(v.value) != repr(target.value)]
        if m.field.startswith("model."):
            changes = tuple(Change(o.role, {}, model_from=target.role) for o in others)
            what = "the model of " + target.role
        else:
            if target.source in ("fallback", "sglang-default") and all(o.source == "user" for o in others):
                # the other side took the default: dropping the typed value is the smaller change
                out.append((f"{', '.join(o.role for o in others)}: omit {flag_of(m.field)} (as {target.role})",
                            tuple(Change(o.role, {}, (m.field,)) for o in others)))
            changes = tuple(Change(o.role, {m.field: target.value}) if target.value is not None
                            else Change(o.role, {}, (m.field,)) for o in others)
            what = (f"{flag_of(m.field)} {show_value(target.value)}" if target.value is not None
                    else f"no {flag_of(m.field)}")
        out.append((f"{', '.join(o.role for o in others)}: {what} (as {target.role})", changes))
    del by_role
    return out


def _fixes(engine: Engine, m: Mismatch, specs: dict[str, RoleSpec], views: dict[str, _View],
           before: set[tuple]) -> Mismatch:
    fixes: list[CrossFix] = []
    dropped: list[dict[str, str]] = []
    tried: set[str] = set()
    for description, changes in _candidates(m, views):
        key = repr(sorted((c.role, sorted(c.set.items(), key=str), c.unset, c.model_from) for c in changes))
        if key in tried:  # one change reached two ways (pp 1 as the prefill's, and pp 1 outright)
            continue
        tried.add(key)
        new_views = dict(views)
        failed = None
        for c in changes:
            spec = specs[c.role].changed(c.set, c.unset, specs[c.model_from] if c.model_from else None)
            try:
                res = spec.resolve(engine, fixes=False)
            except ResolverError as exc:
                failed = f"{c.role} no longer resolves: {exc}"
                break
            if res.conflicts:
                failed = f"{c.role} then conflicts: {res.conflicts[0].message}"
                break
            new_views[c.role] = _View(spec, res)
        if failed is None:
            _, after, _, _ = _compare(list(new_views.values()))
            keys = {x.key for x in after}
            still = [x for x in after if x.check == m.check and x.field == m.field
                     and {v.role for v in x.values} & {v.role for v in m.values}]
            if still:
                now = [new_views[c.role].read(m.field) for c in changes if m.field != "attn_tp_size"]
                failed = ("the mismatch remains: " + "; ".join(f"{v.role} then has {m.field} {show_value(v.value)} "
                                                               f"({v.source}: {v.origin})" for v in now)
                          if now else f"the mismatch remains: {still[0].message}")
        if failed is not None:
            dropped.append({"description": description, "reason": failed})
            continue
        effects = {}
        for c in changes:
            old, new = views[c.role].res.values, new_views[c.role].res.values
            moved = {n: [old.get(n), new.get(n)] for n in sorted(set(old) | set(new))
                     if old.get(n) != new.get(n) and n not in c.set and n not in c.unset and n != "model_path"}
            if moved:
                effects[c.role] = moved
        changes = tuple(replace(c, argv=_argv(engine, c, specs)) for c in changes)
        breaks = tuple(sorted({k[0] for k in keys - before}))
        fixes.append(CrossFix(description, changes, effects, breaks))
    fixes.sort(key=lambda f: (len(f.also_breaks), sum(len(c.set) + len(c.unset) + bool(c.model_from)
                                                       for c in f.changes)))
    return replace(m, fixes=tuple(fixes), not_offered=tuple(dropped))


def _argv(engine: Engine, c: Change, specs: dict[str, RoleSpec]) -> tuple[str, ...]:
    if c.model_from is not None:
        src = specs[c.model_from]
        if "model_path" in src.args:
            return ("--model-path", str(src.args["model_path"]))
        if isinstance(src.launch.model, str):
            return ("--model-config", src.launch.model)
        if src.launch.model_arch:
            return ("--model-arch", str(src.launch.model_arch))
        return ()
    return to_argv(engine.pack, dict(c.set))


# -- front door --------------------------------------------------------------------------------------------------

def check_roles(engine: Engine, specs: list[RoleSpec], fixes: bool = True) -> CrossNodeResult:
    """Resolve every role; when all resolve, compare them and find checked fixes for each mismatch."""
    if not specs:
        raise InputError("cross-node: give at least one role")
    if len(specs) > MAX_ROLES:
        raise InputError(f"cross-node: at most {MAX_ROLES} roles, got {len(specs)}")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        twice = min(n for n in names if names.count(n) > 1)
        raise InputError(f"cross-node: role names must be distinct, got {twice!r} twice")
    resolutions: dict[str, Resolution] = {}
    for spec in specs:
        try:
            resolutions[spec.name] = spec.resolve(engine, fixes=fixes)
        except ResolverError as exc:
            raise InputError(f"role '{spec.name}': {exc}") from None
    if any(r.conflicts for r in resolutions.values()):
        return CrossNodeResult(_layout([_View(s, resolutions[s.name]) for s in specs]), resolutions, (), (), ())
    views = {s.name: _View(s, resolutions[s.name]) for s in specs}
    layout, mismatches, notices, checked = _compare(list(views.values()))
    if fixes:
        by_name = {s.name: s for s in specs}
        before = {m.key for m in mismatches}
        mismatches = [_fixes(engine, m, by_name, views, before) for m in mismatches]
    compared = {n: {f: v.value(f) for f in COMPARED} for n, v in views.items()}
    return CrossNodeResult(layout, resolutions, tuple(mismatches), tuple(notices), tuple(checked), compared)


def role_from_request(name: str, req: Any) -> RoleSpec:
    """A role from a batch-format request (``{"platform": ..., "model_arch": ..., "args": {...}}``)."""
    from .json_request import launch_request

    if not isinstance(name, str) or not name.strip():
        raise InputError(f"cross-node: a role name must be a non-empty string, got {name!r}")
    if not isinstance(req, dict):
        raise InputError(f"role '{name}': a request must be a JSON object, got {type(req).__name__}")
    try:
        return RoleSpec(name, launch_request(req))
    except ResolverError as exc:
        raise InputError(f"role '{name}': {exc}") from None
