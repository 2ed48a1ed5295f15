#!/usr/bin/env python3
"""Turn SGLang's own launch-resolution source into the resolver's checks catalogue.

    python tools/sync_checks.py --sglang SITE-PACKAGES/sglang > resolver/data/sglang_checks.json
    python tools/sync_checks.py --sglang SITE-PACKAGES/sglang --out resolver/data/sglang_checks.json

The catalogue lists every place where SGLang's launch resolution can refuse a launch: each
``raise`` and each ``assert`` of the modules that resolve ``ServerArgs`` (``srt/arg_groups/**``
and ``srt/server_args.py``), and of the model-config checks that resolution runs
(``srt/configs/model_config.py``, only the functions reachable from what the pipeline calls).
The source is parsed with ``ast``; SGLang is never imported, so any Python that can parse the
wheel's source can run this.  ``resolver/data/checks.yaml`` maps each raising function to the rules
that encode it (or says why it is not modelled); tests/test_checks_catalogue.py checks that the
shipped catalogue is what this script makes of the wheel and that the mapping covers it.

Heuristics (each a reasonable reading of source, not an execution of it):

* Sites.  ``raise E(...)`` / ``raise E`` (``exception`` is the class name, without its module), a
  bare ``raise`` (``exception`` names the handler's caught types) and ``assert`` (``AssertionError``)
  inside any function or method; a ``lambda``'s site belongs to the function around it; a nested
  ``def`` is a function of its own, named ``outer.inner``.  Methods are ``Class.method``.
* Model-config reachability.  The roots are ``ModelConfig.from_server_args`` and
  ``ModelConfig.__init__``, every module-level function of model_config.py that a pipeline module
  imports, and every ``ModelConfig`` method or property a pipeline module names as an attribute
  (``model_config.get_num_kv_heads``).  From there the edges are calls of module-level functions,
  ``self.name`` (a call or a property read), ``ModelConfig(...)`` / ``cls(...)`` (``__init__``).
* ``message``: the first argument of the exception (the assert's message), as a template: string
  parts as they are, f-string fields as ``{expr}`` (with ``!r`` / ``:spec``), ``+`` concatenations
  joined, ``"...".format(...)`` / ``"..." % x`` as their literal, a local variable by the one string
  assigned to it in the function; anything else is ``{expr}``.  Empty when there is none.
* ``handle``: a stable name of the site within its function, for the hand-written mapping (line
  numbers move between releases): the fewest leading words (at least five, placeholders written
  ``{}``) of the message that no other site of the function starts with; ``#2``, ``#3`` for
  identical messages in line order; ``assert <condition>`` for an assert without a message.
* Guards: the tests of every ``if`` / ``elif`` / ``while`` / conditional expression around the site,
  the iterables of loops and comprehensions around it, an assert's own condition, and every earlier
  ``if ...: return`` (or ``continue`` / ``break``) of the blocks that lead to the site.  A local
  variable in a guard stands for what its assignments in the function read (followed transitively).
* Parameters: a parameter in a guard stands for what the callers read in the argument they pass for it,
  where the pipeline calls the function by its plain name (``_resolve_max_context_size(requested_size=...)``).
* ``reads.fields``: ServerArgs fields (the annotated attributes of the classes of
  ``srt/arg_groups/fields/*.py``) the guards read as ``R.field`` where ``R`` is a ServerArgs
  receiver (``self`` in server_args.py, ``server_args``, ``args``, ``cfg``, ``view``, ``resolved``,
  ``server_cfg``, ``raw_args``, ``na``, a call of ``resolved_view`` / ``resolving_view`` /
  ``record_of``, a local bound to one of those), ``getattr(R, "field")``, or a parameter named like
  a field, and what a pipeline helper handed the record reads as a whole (``attention_backends_of(view)``;
  not ``model_config_of``, whose reads of ``model_path`` and the like are the model's, under ``model``).
  In model_config.py ``self.attr`` is a field when ``from_server_args`` passes the field
  into the ``__init__`` parameter that ``attr`` is set from.  When the guards read no field, every
  field the function reads is listed instead (``fields_from: "function"``, else ``"guard"``).
* ``model_path`` is read as the model, under ``reads.model``: every launch types it, and a guard that reads it
  tests the checkpoint it names (an instance connector, an object-store URI), not a launch setting.
* ``reads.model``: attribute reads of the model's configuration in the guards (``hf_config.X``,
  ``hf_text_config.X``, ``model_config.X``; ``model_config_of(...)`` and ``self.model_config`` are
  written ``model_config``; in model_config.py ``self.X`` that is no field is ``model_config.X``),
  and calls that take a model configuration, written ``name(receiver)``.
* ``reads.env``: environment variables the guards read: ``envs.NAME``, ``get_bool_env_var("NAME")``
  (and the int / float / str variants), ``os.environ[...]``, ``os.environ.get``, ``os.getenv``,
  ``"NAME" in os.environ``.
* ``guard``: what must hold for the site to run, as a predicate resolver/checks.py evaluates against a
  launch (three-valued: a test it cannot evaluate is unknown).  It is the conjunction of the callers'
  conditions at their calls (one of them, for a function called from several places; for a model
  override, its registered architectures), then the site's own tests, each with the value it must have.
  JSON lists: ``["field", name]``, ``["arch"]`` (the model's architecture), ``["model", attr]`` /
  ``["model", attr, default]`` (a config.json attribute), ``["platform", fact]`` (``get_platform().is_sm100``,
  ``is_hip()``: SGLang's platform probes), ``["env", name, type, default]`` (types and
  defaults from srt/environ.py, or the ``get_*_env_var`` call), ``["const", value]``, ``["not", p]``,
  ``["and", ...]``, ``["or", ...]``, ``["cmp", op, a, b]``, ``["bin", op, a, b]``; ``true`` for no
  condition, ``null`` for a test that reads what no launch value gives (a helper's result, a device
  query such as the CUDA version).  A name resolves through its single assignment, a module constant, or
  what every caller passes for a parameter.
* ``derived_fields``: the fields the pipeline writes itself (declare_resolution keywords, string keys of
  the dicts its passes return), which a launch that leaves them unset does not leave at their default.

Output is deterministic: sites sorted by module, line and column, every list sorted.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

PIPELINE_DIRS = ("srt/arg_groups",)
PIPELINE_FILES = ("srt/server_args.py",)
MODEL_CONFIG = "srt/configs/model_config.py"
# read only for what their helpers read (attn_dp_enabled_of): no site of theirs is a launch check
HELPER_FILES = ("srt/runtime_context.py",)
FIELD_DIR = "srt/arg_groups/fields"

# names a ServerArgs record or view goes by in the pipeline's functions
_SA_NAMES = frozenset({"server_args", "args", "cfg", "view", "resolved", "server_cfg", "raw_args", "na", "sa"})
# calls that hand back a ServerArgs view
_SA_CALLS = frozenset({"resolved_view", "resolving_view", "record_of"})
# names the model's configuration goes by
_MODEL_NAMES = frozenset({"hf_config", "hf_text_config", "text_config", "model_config", "draft_hf_config",
                          "draft_model_config", "hf_cfg", "text_cfg", "vision_config", "quant_cfg",
                          "quant_config", "model_cfg"})
_MODEL_CALLS = frozenset({"model_config_of"})
# the receivers whose attributes are config.json's (model_config.X is SGLang's own derivation, not the file's)
_CONFIG_ROOTS = frozenset({"hf_config", "hf_text_config", "text_config", "hf_cfg", "text_cfg"})
# fields that name the model rather than configure the launch: every launch types model_path, and a guard
# reading it tests the checkpoint it names (a connector URI, an instance), so it is a model read
_MODEL_IDENTITY_FIELDS = frozenset({"model_path"})
# SGLang's platform probes (srt/utils/common.py) by the name its PlatformContext gives them
_PLATFORM_PROBES = {"is_cuda": "is_cuda", "is_hip": "is_hip", "is_npu": "is_npu", "is_xpu": "is_xpu",
                    "is_musa": "is_musa", "is_mps": "is_mps", "is_cpu": "is_cpu", "is_sm90_supported": "is_sm90",
                    "is_sm100_supported": "is_sm100", "is_sm110_supported": "is_sm110",
                    "is_sm100_or_sm110_supported": "is_sm100_or_sm110", "is_sm120_supported": "is_sm120",
                    "is_blackwell_supported": "is_blackwell", "is_gfx95_supported": "is_gfx95"}
_ENV_CALLS = frozenset({"get_bool_env_var", "get_int_env_var", "get_float_env_var", "get_str_env_var"})
_EXITS = (ast.Return, ast.Continue, ast.Break)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class Reads:
    fields: set[str] = field(default_factory=set)
    model: set[str] = field(default_factory=set)
    env: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # bare names still to resolve (locals, parameters)

    def update(self, other: Reads) -> None:
        self.fields |= other.fields
        self.model |= other.model
        self.env |= other.env
        self.names |= other.names


@dataclass
class Function:
    module: str
    qualname: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    in_class: str | None
    # local name -> the expressions assigned to it
    assigned: dict[str, list[ast.expr]] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)
    # the architectures a model override is registered for (@_register_for(...), @register_model_override(...))
    architectures: tuple[str, ...] = ()


class Scanner:
    """Reads of one module's expressions, with the module's own idea of ``self``."""

    def __init__(self, module: str, fields: frozenset[str], self_fields: dict[str, set[str]] | None,
                 helpers: Helpers | None = None):
        self.module = module
        self.fields = fields
        self.helpers = helpers
        # server_args.py: ``self`` is ServerArgs; model_config.py: ``self`` is ModelConfig, whose
        # attributes set from ServerArgs fields map to those fields (self_fields)
        self.self_is_sa = module == "srt/server_args.py"
        self.self_fields = self_fields
        self.constants: dict[str, ast.expr] = {}  # module-level NAME = <constant collection>
        self.env_table: dict[str, tuple[str, Any]] = {}  # envs.NAME -> (type, default), from srt/environ.py

    # -- receivers -------------------------------------------------------------------------------
    def _is_sa(self, node: ast.expr, fn: Function, seen: frozenset[str]) -> bool:
        if isinstance(node, ast.Name):
            if node.id == "self":
                return self.self_is_sa
            if node.id in _SA_NAMES:
                return True
            if node.id in fn.assigned and node.id not in seen:
                return any(self._is_sa(v, fn, seen | {node.id}) for v in fn.assigned[node.id])
            return False
        if isinstance(node, ast.Call):
            return _call_name(node) in _SA_CALLS
        return False

    def _model_root(self, node: ast.expr, fn: Function, seen: frozenset[str]) -> str | None:
        """The model configuration ``node`` denotes, as a name (``hf_config``, ``model_config``), or None."""
        if isinstance(node, ast.Name):
            if node.id == "self" and self.self_fields is not None:
                return "model_config"
            if node.id in _MODEL_NAMES:
                return node.id
            if node.id in fn.assigned and node.id not in seen:
                for v in fn.assigned[node.id]:
                    root = self._model_root(v, fn, seen | {node.id})
                    if root is not None:
                        return root
            return None
        if isinstance(node, ast.Call):
            return "model_config" if _call_name(node) in _MODEL_CALLS else None
        if isinstance(node, ast.Attribute):
            if node.attr in ("hf_config", "hf_text_config", "model_config", "text_config"):
                base = self._model_root(node.value, fn, seen)
                if base is not None or (isinstance(node.value, ast.Name) and node.value.id == "self") \
                        or self._is_sa(node.value, fn, seen):
                    return node.attr
        return None


    # -- guards as predicates ------------------------------------------------------------------------
    def site_predicate(self, fn: Function, node: ast.AST) -> Any:
        """What must hold for ``node`` to run, as a predicate resolver/checks.py evaluates against a
        launch's values (see the module docstring): the callers' conditions, the architectures a model
        override is registered for, then the function's own tests."""
        parts: list[Any] = []
        if self.helpers is not None:
            parts.append(self.helpers.caller_predicate(fn))
        parts.extend(self.conditions_predicate(fn, node))
        return _and(parts)

    def conditions_predicate(self, fn: Function, node: ast.AST) -> list[Any]:
        out: list[Any] = []
        for test, polarity in _conditions(fn, node):
            if polarity is None:
                continue
            p = self.predicate(test, fn)
            out.append(p if polarity else ["not", p])
        return out

    def predicate(self, node: ast.expr, fn: Function, depth: int = 0) -> Any:
        """``node`` as a predicate expression, or None (unknown) where it reads what no launch value
        gives (a helper's result, a platform query, the model's config beyond its architecture)."""
        if depth > 6:
            return None
        down = depth + 1
        if isinstance(node, ast.Constant):
            return ["const", node.value] if _jsonable(node.value) else None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            values = [self.predicate(e, fn, down) for e in node.elts]
            if all(isinstance(v, list) and v[0] == "const" for v in values):
                return ["const", [v[1] for v in values]]
            return None
        if isinstance(node, ast.Name):
            return self._name_predicate(node.id, fn, down)
        if isinstance(node, ast.Attribute):
            if node.attr in self.fields and node.attr not in _MODEL_IDENTITY_FIELDS \
                    and self._is_sa(node.value, fn, frozenset()):
                return ["field", node.attr]
            if (isinstance(node.value, ast.Name) and node.value.id == "self" and self.self_fields
                    and len(self.self_fields.get(node.attr, ())) == 1):
                return ["field", next(iter(self.self_fields[node.attr]))]
            if self._model_root(node.value, fn, frozenset()) in _CONFIG_ROOTS:
                return ["model", node.attr]  # a config.json attribute (hf_config.model_type)
            if self._is_platform(node.value, fn):
                return ["platform", node.attr]  # get_platform().is_sm100
            return None
        if isinstance(node, ast.Subscript):
            return ["arch"] if self._is_architecture(node, fn) else None
        if isinstance(node, ast.Call):
            return self._call_predicate(node, fn, down)
        if isinstance(node, ast.BoolOp):
            junction = "and" if isinstance(node.op, ast.And) else "or"
            return [junction, *(self.predicate(v, fn, down) for v in node.values)]
        if isinstance(node, ast.UnaryOp):
            inner = self.predicate(node.operand, fn, down)
            if isinstance(node.op, ast.Not):
                return ["not", inner]
            if isinstance(node.op, ast.USub) and isinstance(inner, list) and inner[0] == "const" \
                    and isinstance(inner[1], (int, float)) and not isinstance(inner[1], bool):
                return ["const", -inner[1]]
            return None
        if isinstance(node, ast.Compare):
            pairs = []
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                name = _COMPARISONS.get(type(op))
                pairs.append(["cmp", name, self.predicate(left, fn, down), self.predicate(right, fn, down)]
                             if name else None)
                left = right
            return pairs[0] if len(pairs) == 1 else ["and", *pairs]
        if isinstance(node, ast.BinOp):
            name = _ARITHMETIC.get(type(node.op))
            return ["bin", name, self.predicate(node.left, fn, down), self.predicate(node.right, fn, down)] \
                if name else None
        return None

    def _name_predicate(self, name: str, fn: Function, depth: int) -> Any:
        values = fn.assigned.get(name, [])
        if name in fn.params:
            if values:
                return None  # reassigned: which value reaches the test is not known here
            return self.helpers.argument_predicate(fn, name, depth) if self.helpers is not None else None
        if len(values) == 1:
            return self.predicate(values[0], fn, depth)
        if not values and name in self.constants:
            return self.predicate(self.constants[name], fn, depth)
        return None

    def _call_predicate(self, node: ast.Call, fn: Function, depth: int) -> Any:
        name = _call_name(node)
        f = node.func
        # envs.NAME.get()
        if (isinstance(f, ast.Attribute) and f.attr == "get" and isinstance(f.value, ast.Attribute)
                and isinstance(f.value.value, ast.Name) and f.value.value.id == "envs"):
            env = f.value.attr
            kind, default = self.env_table.get(env, ("str", None))
            return ["env", env, kind, default]
        if name in _ENV_CALLS and node.args and _const_str(node.args[0]):
            kind = {"get_bool_env_var": "bool", "get_int_env_var": "int", "get_float_env_var": "float"}.get(name, "str")
            default = node.args[1] if len(node.args) > 1 else None
            value = default.value if isinstance(default, ast.Constant) else None
            if kind == "bool":
                value = str(value).lower() in ("1", "true") if value is not None else False
            return ["env", _const_str(node.args[0]), kind, value]
        if (isinstance(f, ast.Attribute) and f.attr == "get" and _is_os_environ(f.value) and node.args
                and _const_str(node.args[0])):
            default = node.args[1] if len(node.args) > 1 else None
            value = default.value if isinstance(default, ast.Constant) and isinstance(default.value, str) else None
            return ["env", _const_str(node.args[0]), "str", value]
        if name == "getattr" and len(node.args) >= 2 and _const_str(node.args[1]) in self.fields \
                and self._is_sa(node.args[0], fn, frozenset()):
            return ["field", _const_str(node.args[1])]
        if name == "getattr" and len(node.args) >= 2 and _const_str(node.args[1]) \
                and self._model_root(node.args[0], fn, frozenset()) in _CONFIG_ROOTS:
            default = node.args[2] if len(node.args) > 2 else None
            if default is None or (isinstance(default, ast.Constant) and _jsonable(default.value)):
                return ["model", _const_str(node.args[1]), default.value if default is not None else None]
            return None
        if name in _PLATFORM_PROBES and not node.args:
            return ["platform", _PLATFORM_PROBES[name]]  # is_hip(), is_sm100_supported()
        if name == "bool" and len(node.args) == 1:
            return self.predicate(node.args[0], fn, depth)
        return None

    def _is_platform(self, node: ast.expr, fn: Function) -> bool:
        """``get_platform()``, or a local bound to it once."""
        if isinstance(node, ast.Name) and len(fn.assigned.get(node.id, [])) == 1:
            node = fn.assigned[node.id][0]
        return isinstance(node, ast.Call) and _call_name(node) == "get_platform" and not node.args

    def _is_architecture(self, node: ast.Subscript, fn: Function) -> bool:
        """``hf_config.architectures[0]``, also as ``(hf_config.architectures or [None])[0]``."""
        if not (isinstance(node.slice, ast.Constant) and node.slice.value == 0):
            return False
        base = node.value
        if isinstance(base, ast.BoolOp) and isinstance(base.op, ast.Or):
            base = base.values[0]
        if isinstance(base, ast.Attribute) and base.attr == "architectures":
            return self._model_root(base.value, fn, frozenset()) is not None
        if isinstance(base, ast.Call) and _call_name(base) == "getattr" and len(base.args) >= 2 \
                and _const_str(base.args[1]) == "architectures":
            return self._model_root(base.args[0], fn, frozenset()) is not None
        return False

    # -- reads of an expression ------------------------------------------------------------------
    def reads(self, node: ast.AST, fn: Function) -> Reads:
        out = Reads()
        self._visit(node, fn, out)
        return out

    def _visit(self, node: ast.AST, fn: Function, out: Reads) -> None:
        if isinstance(node, _FUNCS + (ast.ClassDef,)):
            return  # a nested definition is read where it runs, not where it is written
        if isinstance(node, ast.Attribute):
            if self._attribute(node, fn, out):
                return
        elif isinstance(node, ast.Subscript):
            key = _env_subscript(node)
            if key is not None:
                out.env.add(key)
                return
        elif isinstance(node, ast.Call):
            self._call(node, fn, out)
        elif isinstance(node, ast.Compare):
            # "NAME" in os.environ
            if (len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))
                    and _is_os_environ(node.comparators[0]) and _const_str(node.left)):
                out.env.add(_const_str(node.left) or "")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out.names.add(node.id)
        for child in ast.iter_child_nodes(node):
            self._visit(child, fn, out)

    def _attribute(self, node: ast.Attribute, fn: Function, out: Reads) -> bool:
        """Record a field, model or env read; True when the whole chain is consumed."""
        base = node.value
        if isinstance(base, ast.Name) and base.id == "envs" and node.attr.isupper():
            out.env.add(node.attr)
            return True
        if self._is_sa(base, fn, frozenset()):
            if node.attr in _MODEL_IDENTITY_FIELDS:
                out.model.add(node.attr)
            elif node.attr in self.fields:
                out.fields.add(node.attr)
            if isinstance(base, ast.Call):  # resolved_view(server_args).x: the argument is no read of its own
                return True
            return True
        if (isinstance(base, ast.Name) and base.id == "self" and self.self_fields is not None
                and node.attr in self.self_fields):
            out.fields |= self.self_fields[node.attr]
            return True
        root = self._model_root(base, fn, frozenset())
        if root is not None and node.attr not in ("hf_config", "hf_text_config", "model_config", "text_config"):
            out.model.add(f"{root}.{node.attr}")
            return True
        return False

    def _call(self, node: ast.Call, fn: Function, out: Reads) -> None:
        name = _call_name(node)
        if name in _ENV_CALLS or name in ("getenv", "os.getenv"):
            key = _const_str(node.args[0]) if node.args else None
            if key:
                out.env.add(key)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and _is_os_environ(node.func.value):
            key = _const_str(node.args[0]) if node.args else None
            if key:
                out.env.add(key)
        if name == "getattr" and len(node.args) >= 2:
            attr = _const_str(node.args[1])
            if (attr is None and isinstance(node.args[1], ast.Name) and node.args[1].id in fn.params
                    and self.helpers is not None and self._is_sa(node.args[0], fn, frozenset())):
                # getattr(view, attr) with the field name handed in by the callers
                out.fields |= self.helpers.argument_strings(fn, node.args[1].id) & self.fields
            if attr:
                if self._is_sa(node.args[0], fn, frozenset()) and attr in self.fields:
                    (out.model if attr in _MODEL_IDENTITY_FIELDS else out.fields).add(attr)
                root = self._model_root(node.args[0], fn, frozenset())
                if root is not None:
                    out.model.add(f"{root}.{attr}")
        # a predicate of the model's configuration: is_deepseek_dsa(hf_config)
        if name and name not in ("getattr", "hasattr", "isinstance") and name not in _MODEL_CALLS:
            for arg in node.args:
                root = self._model_root(arg, fn, frozenset())
                if root is not None and not isinstance(arg, ast.Call):
                    out.model.add(f"{name.rsplit('.', 1)[-1]}({root})")
        # a helper of the pipeline handed the ServerArgs record reads what its body reads
        handed = (*node.args, *(k.value for k in node.keywords))
        if name and name not in _MODEL_CALLS and self.helpers is not None \
                and any(self._is_sa(a, fn, frozenset()) for a in handed):
            helper = self.helpers.reads(name.rsplit(".", 1)[-1], self.module)
            if helper is not None:
                out.fields |= helper.fields
                out.model |= helper.model
                out.env |= helper.env
        if name == "hasattr" and len(node.args) >= 2:
            attr = _const_str(node.args[1])
            root = self._model_root(node.args[0], fn, frozenset())
            if attr and root is not None:
                out.model.add(f"{root}.{attr}")

    def resolved(self, reads: Reads, fn: Function) -> Reads:
        """``reads`` with its bare names replaced by what they stand for: a local variable by what its
        assignments read (transitively), a parameter named like a field by that field."""
        out = Reads(set(reads.fields), set(reads.model), set(reads.env))
        todo = sorted(reads.names)
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in fn.assigned:
                for value in fn.assigned[name]:
                    r = self.reads(value, fn)
                    out.fields |= r.fields
                    out.model |= r.model
                    out.env |= r.env
                    todo.extend(sorted(r.names - seen))
            if name in fn.params:  # a parameter may also be reassigned (dtype = dtype.lower())
                if name in _MODEL_IDENTITY_FIELDS:
                    out.model.add(name)
                elif name in self.fields:
                    out.fields.add(name)
                passed = self.helpers.argument_reads(fn, name) if self.helpers is not None else None
                if passed is not None:
                    out.fields |= passed.fields
                    out.model |= passed.model
                    out.env |= passed.env
        return out


class Helpers:
    """The pipeline's small functions by name, and what each reads as a whole, for the guards that
    call them with the ServerArgs record (``attention_backends_of(view)``, ``use_mla_backend(server_args)``)."""

    def __init__(self, fields: frozenset[str]):
        self.fields = fields
        self.by_name: dict[str, list[Function]] = {}
        self.scanners: dict[str, Scanner] = {}
        self._cache: dict[tuple[str, str], Reads | None] = {}
        self._busy: set[tuple[str, str]] = set()
        # callee name -> (caller, call) for every plain-name call: what a parameter is handed
        self.calls: dict[str, list[tuple[Function, ast.Call]]] = {}
        self._passing: set[tuple[str, str, str]] = set()
        self._predicates: dict[tuple[str, str, str], Any] = {}

    def add(self, fn: Function, scanner: Scanner) -> None:
        self.by_name.setdefault(fn.qualname.rsplit(".", 1)[-1], []).append(fn)
        self.scanners[fn.module] = scanner
        for node in _own_nodes(fn.node):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                self.calls.setdefault(node.func.id, []).append((fn, node))

    def _resolves_to(self, name: str, module: str) -> Function | None:
        candidates = self.by_name.get(name, [])
        chosen = [f for f in candidates if f.module == module] or candidates
        return chosen[0] if len(chosen) == 1 else None

    def _arguments(self, fn: Function, param: str) -> Iterator[tuple[Function, ast.expr]]:
        """(caller, argument) for every call of ``fn`` by its plain name that passes ``param``."""
        if fn.in_class is not None:
            return
        name = fn.qualname.rsplit(".", 1)[-1]
        a = fn.node.args
        positional = [p.arg for p in (*a.posonlyargs, *a.args)]
        for caller, call in self.calls.get(name, []):
            if self._resolves_to(name, caller.module) is not fn:
                continue
            expr = next((k.value for k in call.keywords if k.arg == param), None)
            if expr is None and param in positional:
                index = positional.index(param)
                if index < len(call.args) and not any(isinstance(x, ast.Starred) for x in call.args[:index + 1]):
                    expr = call.args[index]
            if expr is not None:
                yield caller, expr

    def caller_predicate(self, fn: Function) -> Any:
        """What holds wherever ``fn`` runs: for a function the pipeline calls by name, one of its callers'
        conditions at the call (and theirs, up the chain); for a model override, that the model is one
        of the architectures it is registered for; true for a hook the pipeline runs itself."""
        key = (fn.module, fn.qualname, "")
        if key in self._predicates:
            return self._predicates[key]
        if key in self._passing:
            return None  # a recursive call chain: no condition known
        if fn.architectures:
            self._predicates[key] = ["cmp", "in", ["arch"], ["const", list(fn.architectures)]]
            return self._predicates[key]
        name = fn.qualname.rsplit(".", 1)[-1]
        callers = [] if fn.in_class is not None else \
            [(c, call) for c, call in self.calls.get(name, []) if self._resolves_to(name, c.module) is fn]
        if not callers:
            self._predicates[key] = True
            return True
        self._passing.add(key)
        options = [_and([self.caller_predicate(c), *self.scanners[c.module].conditions_predicate(c, call)])
                   for c, call in callers]
        self._passing.discard(key)
        self._predicates[key] = _or(options)
        return self._predicates[key]

    def argument_predicate(self, fn: Function, param: str, depth: int) -> Any:
        """What ``param`` stands for when every caller passes the same thing, else None."""
        key = (fn.module, fn.qualname, "=" + param)
        if key in self._passing:
            return None
        self._passing.add(key)
        passed = [self.scanners[c.module].predicate(expr, c, depth) for c, expr in self._arguments(fn, param)]
        self._passing.discard(key)
        if passed and all(p == passed[0] for p in passed):
            return passed[0]
        return None

    def argument_strings(self, fn: Function, param: str) -> set[str]:
        """The string constants the callers of ``fn`` pass as ``param``."""
        out: set[str] = set()
        for caller, expr in self._arguments(fn, param):
            # a constant, or a local the caller loops over (for attr, label in [("dsa_prefill_backend", ...)])
            values = caller.assigned.get(expr.id, []) if isinstance(expr, ast.Name) else [expr]
            out |= {text for value in values for node in ast.walk(value) if (text := _const_str(node))}
        return out

    def argument_reads(self, fn: Function, param: str) -> Reads | None:
        """What the callers of ``fn`` read in the argument they pass as ``param`` (``_resolve_max_context_size(
        requested_size=...)``), or None when nothing calls it by name."""
        key = (fn.module, fn.qualname, param)
        if key in self._passing:
            return None
        self._passing.add(key)
        out: Reads | None = None
        for caller, expr in self._arguments(fn, param):
            scanner = self.scanners[caller.module]
            r = scanner.resolved(scanner.reads(expr, caller), caller)
            out = out or Reads()
            out.fields |= r.fields
            out.model |= r.model
            out.env |= r.env
        self._passing.discard(key)
        return out

    def reads(self, name: str, module: str) -> Reads | None:
        """What the helper ``name`` reads (its own module's definition first; None when there is no
        single definition, or while it is being read: a recursive helper adds nothing more)."""
        candidates = self.by_name.get(name, [])
        local = [f for f in candidates if f.module == module]
        chosen = local or candidates
        if len(chosen) != 1:
            return None
        fn = chosen[0]
        key = (fn.module, fn.qualname)
        if key in self._cache:
            return self._cache[key]
        if key in self._busy:
            return None
        self._busy.add(key)
        scanner = self.scanners[fn.module]
        whole = Reads()
        for stmt in fn.node.body:
            whole.update(scanner.resolved(scanner.reads(stmt, fn), fn))
        whole.names = set()
        self._busy.discard(key)
        self._cache[key] = whole
        return whole


# -- helpers -------------------------------------------------------------------------------------

_COMPARISONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
                ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%", ast.Div: "/"}


def _jsonable(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _and(parts: list[Any]) -> Any:
    """A conjunction without the parts known true (JSON true), flattened; true when nothing is left."""
    flat: list[Any] = []
    for p in parts:
        if p is True:
            continue
        if isinstance(p, list) and p and p[0] == "and":
            flat.extend(q for q in p[1:] if q is not True)
        else:
            flat.append(p)
    if not flat:
        return True
    return flat[0] if len(flat) == 1 else ["and", *flat]


def _or(parts: list[Any]) -> Any:
    if any(p is True for p in parts):
        return True
    return parts[0] if len(parts) == 1 else ["or", *parts]

def _call_name(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        if isinstance(f.value, ast.Name):
            return f"{f.value.id}.{f.attr}"
        return f.attr
    return None


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_os_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)
            and node.value.id == "os")


def _env_subscript(node: ast.Subscript) -> str | None:
    return _const_str(node.slice) if _is_os_environ(node.value) else None


def _field_names(root: str) -> frozenset[str]:
    """Every ServerArgs field: the public annotated attributes of the field classes."""
    names: set[str] = set()
    directory = os.path.join(root, FIELD_DIR)
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".py"):
            continue
        tree = _parse(os.path.join(directory, name))
        for cls in tree.body:
            if isinstance(cls, ast.ClassDef):
                for stmt in cls.body:
                    if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                            and not stmt.target.id.startswith("_")):
                        names.add(stmt.target.id)
    return frozenset(names)


def _parse(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as fh:
        return ast.parse(fh.read(), filename=path)


def _release(root: str) -> str:
    """The wheel's version: ``_version.py`` (written when the wheel is built), else its dist-info."""
    path = os.path.join(root, "_version.py")
    if os.path.exists(path):
        for stmt in _parse(path).body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__"
                                                    for t in stmt.targets):
                value = _const_str(stmt.value)
                if value:
                    return value
    parent = os.path.dirname(root)
    for name in sorted(os.listdir(parent)):
        if name.startswith("sglang-") and name.endswith(".dist-info"):
            with open(os.path.join(parent, name, "METADATA"), encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
    raise SystemExit(f"cannot tell the release of {root}: no _version.py and no sglang-*.dist-info beside it")


def _functions(tree: ast.Module, module: str) -> Iterator[Function]:
    """Every function and method of a module with its qualified name (``Class.method``, ``outer.inner``)."""
    def walk(node: ast.AST, prefix: str, in_class: str | None) -> Iterator[Function]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.", child.name)
            elif isinstance(child, _FUNCS):
                fn = Function(module, prefix + child.name, child, in_class)
                fn.architectures = _registered_architectures(child)
                _index_locals(fn)
                yield fn
                yield from walk(child, f"{prefix}{child.name}.", None)
            else:
                yield from walk(child, prefix, in_class)
    yield from walk(tree, "", None)


def _own_nodes(fn_node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function that are not inside a nested def or class (lambdas included)."""
    for child in ast.iter_child_nodes(fn_node):
        if isinstance(child, _FUNCS + (ast.ClassDef,)):
            continue
        yield child
        yield from _own_nodes(child)


def _registered_architectures(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    archs: list[str] = []
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call) and _call_name(deco) in ("_register_for", "register_model_override"):
            archs.extend(a for arg in deco.args if (a := _const_str(arg)))
    return tuple(sorted(set(archs)))


def _module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level names bound once to a constant or a collection of constants (backend lists)."""
    seen: dict[str, list[ast.expr]] = {}
    for stmt in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        for t in targets:
            if isinstance(t, ast.Name) and value is not None:
                seen.setdefault(t.id, []).append(value)
    out: dict[str, ast.expr] = {}
    for name, values in seen.items():
        v = values[0]
        if isinstance(v, ast.Call) and _call_name(v) in ("frozenset", "set", "tuple", "list") and len(v.args) == 1:
            v = v.args[0]
        if len(values) == 1 and isinstance(v, (ast.Constant, ast.Tuple, ast.List, ast.Set)):
            out[name] = v
    return out


def _derived_fields(trees: Iterable[ast.Module], fields: frozenset[str]) -> set[str]:
    """The fields SGLang's pipeline writes itself: keywords of declare_resolution(...), string keys of the
    dicts its passes and overrides return or fill (an over-approximation: a field named so may be left as
    given)."""
    out: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _call_name(node) == "declare_resolution":
                out |= {k.arg for k in node.keywords if k.arg}
            elif isinstance(node, ast.Dict):
                out |= {text for k in node.keys if k is not None and (text := _const_str(k))}
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                text = _const_str(node.slice)
                if text:
                    out.add(text)
    return out & fields


def _env_table(root: str) -> dict[str, tuple[str, Any]]:
    """SGLang's environment variables (srt/environ.py's Envs): NAME -> (type, default)."""
    kinds = {"EnvBool": "bool", "EnvInt": "int", "EnvFloat": "float", "EnvStr": "str"}
    out: dict[str, tuple[str, Any]] = {}
    tree = _parse(os.path.join(root, "srt", "environ.py"))
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name == "Envs":
            for stmt in cls.body:
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                        and isinstance(stmt.value, ast.Call)):
                    kind = kinds.get(_call_name(stmt.value) or "", "str")
                    args = stmt.value.args
                    default = args[0].value if args and isinstance(args[0], ast.Constant) \
                        and _jsonable(args[0].value) else None
                    out[stmt.targets[0].id] = (kind, default)
    return out


def _targets(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _targets(elt)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value)


def _index_locals(fn: Function) -> None:
    a = fn.node.args
    fn.params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    for node in _own_nodes(fn.node):
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assign):
            pairs = [(t, node.value) for t in node.targets]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            pairs = [(node.target, node.value)]
        elif isinstance(node, ast.NamedExpr):
            pairs = [(node.target, node.value)]
        elif isinstance(node, (ast.For, ast.comprehension)):
            pairs = [(node.target, node.iter)]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            pairs = [(node.optional_vars, node.context_expr)]
        for target, value in pairs:
            for name in _targets(target):
                fn.assigned.setdefault(name, []).append(value)


# -- messages ------------------------------------------------------------------------------------

def _template(node: ast.expr | None, fn: Function, depth: int = 0) -> str:
    if node is None:
        return ""
    text = _const_str(node)
    if text is not None:
        return text
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                conv = {-1: "", 115: "!s", 114: "!r", 97: "!a"}[value.conversion]
                spec = ""
                if value.format_spec is not None:
                    spec = ":" + _template(value.format_spec, fn, depth + 1).replace("{", "").replace("}", "")
                parts.append("{" + ast.unparse(value.value) + conv + spec + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _template(node.left, fn, depth) + _template(node.right, fn, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _const_str(node.left) is not None:
        return _const_str(node.left) or ""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and _const_str(node.func.value) is not None):
        return _const_str(node.func.value) or ""
    if isinstance(node, ast.Name) and depth < 3:
        values = fn.assigned.get(node.id, [])
        if len(values) == 1 and isinstance(values[0], (ast.Constant, ast.JoinedStr, ast.BinOp)):
            return _template(values[0], fn, depth + 1)
    return "{" + ast.unparse(node) + "}"


def _handles(sites: list[dict[str, Any]]) -> None:
    """Give each site of one function a handle no other site of it shares (see the module docstring)."""
    words = [re.sub(r"\{[^{}]*\}", "{}", s["message"]).split() for s in sites]
    for i, site in enumerate(sites):
        if not words[i]:
            continue
        n = min(5, len(words[i]))
        while n < len(words[i]) and any(j != i and words[j][:n] == words[i][:n] for j in range(len(sites))):
            n += 1
        site["handle"] = " ".join(words[i][:n])
    for site in sites:
        if "handle" not in site:
            site["handle"] = site.pop("_fallback")
        site.pop("_fallback", None)
    counts: dict[str, int] = {}
    for site in sites:  # in line order: identical messages are numbered
        counts[site["handle"]] = counts.get(site["handle"], 0) + 1
        if counts[site["handle"]] > 1:
            site["handle"] += f" #{counts[site['handle']]}"


# -- sites ---------------------------------------------------------------------------------------

def _path_to(root: ast.AST, target: ast.AST) -> list[ast.AST] | None:
    """The nodes from ``root`` down to ``target`` (both included), not entering nested definitions."""
    if root is target:
        return [root]
    for child in ast.iter_child_nodes(root):
        if isinstance(child, _FUNCS + (ast.ClassDef,)) and child is not target:
            continue
        sub = _path_to(child, target)
        if sub is not None:
            return [root, *sub]
    return None


def _exits(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], _EXITS)


def _conditions(fn: Function, node: ast.AST) -> list[tuple[ast.expr, bool | None]]:
    """The tests on the way to ``node`` (a site or a call), outermost first, each with the value it must
    have for ``node`` to run: True in an ``if`` body, False in its ``else`` and for an earlier
    ``if X: return`` (or continue, break), False for an assert's own test (it raises when the test
    fails); None for what is read but is no condition (a loop's iterable, a match subject)."""
    path = _path_to(fn.node, node) or []
    tests: list[tuple[ast.expr, bool | None]] = []
    for parent, child in zip(path, path[1:], strict=False):
        if isinstance(parent, (ast.If, ast.While)) and child is not parent.test:
            tests.append((parent.test, child not in parent.orelse))
        elif isinstance(parent, ast.IfExp) and child is not parent.test:
            tests.append((parent.test, child is parent.body))
        elif isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and child is not parent.iter:
            tests.append((parent.iter, None))
        elif isinstance(parent, ast.Match):
            tests.append((parent.subject, None))
        # an earlier "if X: return" of a block on the path is a guard of the site
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and child in block:
                for stmt in block[:block.index(child)]:
                    if isinstance(stmt, ast.If) and _exits(stmt.body) and not stmt.orelse:
                        tests.append((stmt.test, False))
    if isinstance(node, ast.Assert):
        tests.append((node.test, False))
    return tests


def _guards(fn: Function, node: ast.AST) -> list[ast.expr]:
    return [test for test, _ in _conditions(fn, node)]


def _exception(site: ast.Raise | ast.Assert, fn: Function) -> str:
    if isinstance(site, ast.Assert):
        return "AssertionError"
    exc = site.exc
    if exc is None:  # a bare raise: the types its handler catches
        path = _path_to(fn.node, site) or []
        for node in reversed(path):
            if isinstance(node, ast.ExceptHandler):
                return ast.unparse(node.type) if node.type is not None else "BaseException"
        return "BaseException"
    if isinstance(exc, ast.Call):
        exc = exc.func
    return ast.unparse(exc).rsplit(".", 1)[-1]


def _message_node(site: ast.Raise | ast.Assert) -> ast.expr | None:
    if isinstance(site, ast.Assert):
        return site.msg
    exc = site.exc
    if isinstance(exc, ast.Call):
        if exc.args:
            return exc.args[0]
        for kw in exc.keywords:
            if kw.arg in ("msg", "message"):
                return kw.value
    return None


def _function_sites(fn: Function, scanner: Scanner, fallback: Reads) -> list[dict[str, Any]]:
    sites: list[dict[str, Any]] = []
    nodes = sorted((n for n in _own_nodes(fn.node) if isinstance(n, (ast.Raise, ast.Assert))),
                   key=lambda n: (n.lineno, n.col_offset))
    for node in nodes:
        assert isinstance(node, (ast.Raise, ast.Assert))
        guard = Reads()
        for test in _guards(fn, node):
            guard.update(scanner.reads(test, fn))
        reads = scanner.resolved(guard, fn)
        fields_from = "guard"
        if not reads.fields:
            reads.fields = set(fallback.fields)
            fields_from = "function"
        message = _template(_message_node(node), fn)
        kind = "assert" if isinstance(node, ast.Assert) else "raise"
        if isinstance(node, ast.Assert):
            default_handle = "assert " + " ".join(ast.unparse(node.test).split()[:8])
        else:
            default_handle = "re-raise" if node.exc is None else _exception(node, fn)
        sites.append({
            "module": fn.module, "function": fn.qualname, "line": node.lineno, "col": node.col_offset,
            "kind": kind, "exception": _exception(node, fn), "message": message,
            "reads": {"fields": sorted(reads.fields), "model": sorted(reads.model), "env": sorted(reads.env),
                      "fields_from": fields_from},
            "guard": scanner.site_predicate(fn, node),
            "_fallback": default_handle,
        })
    _handles(sites)
    return sites


# -- model-config reachability ------------------------------------------------------------------

def _model_config_roots(pipeline_trees: Iterable[ast.Module], methods: set[str]) -> set[str]:
    roots = {"ModelConfig.from_server_args", "ModelConfig.__init__"}
    for tree in pipeline_trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "sglang.srt.configs.model_config":
                roots |= {alias.name for alias in node.names}
            elif isinstance(node, ast.Attribute) and node.attr in methods:
                roots.add(f"ModelConfig.{node.attr}")
    return roots


def _reachable(functions: dict[str, Function], roots: set[str]) -> set[str]:
    """The model-config functions the roots can call (see the module docstring for the edges)."""
    todo = sorted(r for r in roots if r in functions)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        fn = functions[name]
        for node in _own_nodes(fn.node):
            callee: str | None = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                callee = "ModelConfig.__init__" if node.func.id in ("ModelConfig", "cls") else node.func.id
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in ("self", "ModelConfig", "cls"):
                callee = f"ModelConfig.{node.attr}"
            if callee in functions and callee not in seen:
                todo.append(callee)
    return seen


def _model_config_self_fields(functions: dict[str, Function], scanner: Scanner) -> dict[str, set[str]]:
    """ModelConfig attribute -> the ServerArgs fields it is set from (via from_server_args and __init__)."""
    param_fields: dict[str, set[str]] = {}
    build = functions["ModelConfig.from_server_args"]
    for node in _own_nodes(build.node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ModelConfig":
            for kw in node.keywords:
                if kw.arg is not None:
                    fields = scanner.resolved(scanner.reads(kw.value, build), build).fields
                    if fields:
                        param_fields[kw.arg] = fields
    init = functions["ModelConfig.__init__"]
    attrs: dict[str, set[str]] = {}
    for node in _own_nodes(init.node):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in param_fields:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    attrs.setdefault(target.attr, set()).update(param_fields[node.value.id])
    return attrs


# -- the catalogue -------------------------------------------------------------------------------

def _pipeline_modules(root: str) -> list[str]:
    modules = list(PIPELINE_FILES)
    for top in PIPELINE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in filenames:
                if name.endswith(".py"):
                    modules.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return sorted(modules)


def _module_sites(module: str, functions: list[Function], scanner: Scanner, keep: set[str] | None) -> list[dict]:
    sites: list[dict[str, Any]] = []
    for fn in functions:
        if keep is not None and fn.qualname not in keep:
            continue
        if not any(isinstance(n, (ast.Raise, ast.Assert)) for n in _own_nodes(fn.node)):
            continue
        whole = scanner.resolved(scanner.reads(fn.node.args, fn), fn)  # defaults of parameters
        for stmt in fn.node.body:
            whole.update(scanner.resolved(scanner.reads(stmt, fn), fn))
        sites.extend(_function_sites(fn, scanner, whole))
    return sites


def catalogue(root: str) -> dict[str, Any]:
    root = os.path.abspath(root)
    fields = _field_names(root)
    modules = _pipeline_modules(root)
    trees = {m: _parse(os.path.join(root, m)) for m in modules}
    helpers = Helpers(fields)
    env_table = _env_table(root)
    functions: dict[str, list[Function]] = {}
    for module in [*modules, *HELPER_FILES]:
        tree = trees[module] if module in trees else _parse(os.path.join(root, module))
        scanner = Scanner(module, fields, None, helpers)
        scanner.constants, scanner.env_table = _module_constants(tree), env_table
        helpers.scanners[module] = scanner
        functions[module] = list(_functions(tree, module))
        for fn in functions[module]:
            helpers.add(fn, scanner)

    mc_tree = _parse(os.path.join(root, MODEL_CONFIG))
    mc_functions = {fn.qualname: fn for fn in _functions(mc_tree, MODEL_CONFIG)}
    methods = {q.split(".", 1)[1] for q in mc_functions if q.startswith("ModelConfig.")}
    reachable = _reachable(mc_functions, _model_config_roots(trees.values(), methods))
    self_fields = _model_config_self_fields(mc_functions, Scanner(MODEL_CONFIG, fields, {}))
    mc_scanner = Scanner(MODEL_CONFIG, fields, self_fields, helpers)
    mc_scanner.constants, mc_scanner.env_table = _module_constants(mc_tree), env_table
    for fn in mc_functions.values():
        if "." not in fn.qualname:  # module-level predicates the pipeline calls (is_deepseek_dsa)
            helpers.add(fn, mc_scanner)

    sites: list[dict[str, Any]] = []
    for module in modules:
        sites.extend(_module_sites(module, functions[module], helpers.scanners[module], None))
    sites.extend(_module_sites(MODEL_CONFIG, list(mc_functions.values()), mc_scanner, reachable))

    sites.sort(key=lambda s: (s["module"], s["line"], s["col"]))
    for s in sites:
        del s["col"]
    counts = {"raise": sum(s["kind"] == "raise" for s in sites),
              "assert": sum(s["kind"] == "assert" for s in sites),
              "assert_without_message": sum(s["kind"] == "assert" and not s["message"] for s in sites),
              "functions": len({(s["module"], s["function"]) for s in sites})}
    return {
        "release": _release(root),
        "generated_by": "tools/sync_checks.py",
        "scanned": [*modules, MODEL_CONFIG],
        "helpers_from": list(HELPER_FILES),
        "model_config_functions_reached": sorted(reachable),
        # fields the pipeline writes itself: a launch that leaves one unset does not leave it at its default
        "derived_fields": sorted(_derived_fields([*trees.values(), mc_tree], fields)),
        "counts": counts,
        "sites": sites,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Write SGLang's launch checks catalogue (JSON) from its source.")
    parser.add_argument("--sglang", required=True, help="the installed sglang package directory (holding srt/)")
    parser.add_argument("--out", help="write here instead of standard output")
    ns = parser.parse_args(argv)
    if not os.path.isdir(os.path.join(ns.sglang, "srt", "arg_groups")):
        parser.error(f"{ns.sglang} is not an sglang package directory (no srt/arg_groups)")
    import json

    text = json.dumps(catalogue(ns.sglang), indent=1, ensure_ascii=False) + "\n"
    if ns.out:
        with open(ns.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
