"""Models as operators name them: a local path, a Hugging Face id, or a well-known name.

``--model-path`` (SGLang's flag; ``model_path`` in batch and API requests) is resolved offline,
in this order:

1. a local directory holding ``config.json``, or a ``config.json`` path;
2. a Hugging Face id found in the local Hugging Face cache, read with the cache's own layout
   (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``, else
   ``~/.cache/huggingface/hub``; https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables):
   ``models--{org}--{name}/refs/main`` names a commit, whose ``snapshots/{commit}/config.json``
   is read; without a usable ``refs/main`` the newest snapshot holding a ``config.json`` is used;
3. a model of the catalogue shipped in ``resolver/data/models.json`` (by id or alias, any case).

The cache comes before the catalogue because a checkpoint on disk is what will be served (it may
be a fork or a quantized copy); the catalogue only stands in when nothing local exists.  Nothing is
ever downloaded.  ``--model-arch`` alone is served by :func:`representative`.
"""
from __future__ import annotations

import copy
import difflib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from .errors import InputError
from .safe_io import UnreadableFile, checked_path, parse_json, read_text

__all__ = ["CHECKPOINT_FILES", "CatalogueEntry", "ModelSource", "catalogue", "find_model", "hub_cache_dir",
           "read_checkpoint", "representative"]

Origin = Literal["path", "hf-cache", "catalogue"]


#: the checkpoint files besides config.json that SGLang 0.5.23's launch resolution reads: ModelOpt's
#: ``hf_quant_config.json`` names the quantization of a checkpoint whose config.json has neither
#: ``quantization_config`` nor ``compression_config`` (configs/model_config.py _parse_quant_hf_config)
CHECKPOINT_FILES = ("hf_quant_config.json",)


@dataclass(frozen=True)
class ModelSource:
    """A model config, the other checkpoint files SGLang reads (:data:`CHECKPOINT_FILES`, by name), and
    where they came from."""

    config: dict[str, Any]
    origin: Origin
    #: the file read (path or hf-cache), or the URL the catalogue's values come from
    where: str
    #: the Hugging Face id, when known (a cache or catalogue hit); None for a plain local path
    canonical_id: str | None
    #: file name -> its JSON, for the CHECKPOINT_FILES present beside config.json
    files: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CatalogueEntry:
    """One well-known model: its Hugging Face id, short names, published config.json fields, and the
    other checkpoint files SGLang reads (:data:`CHECKPOINT_FILES`) where the checkpoint ships one."""

    id: str
    aliases: tuple[str, ...]
    source: str
    checked: str
    config: Mapping[str, Any]
    files: Mapping[str, Any] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return str(self.config["architectures"][0])


@dataclass(frozen=True)
class _Catalogue:
    entries: tuple[CatalogueEntry, ...]
    by_name: dict[str, CatalogueEntry]  # lower-case id or alias -> entry
    representatives: dict[str, CatalogueEntry]  # architecture -> entry


@lru_cache(maxsize=1)
def _load() -> _Catalogue:
    text = resources.files("resolver").joinpath("data/models.json").read_text(encoding="utf-8")
    data = json.loads(text)
    entries = tuple(CatalogueEntry(id=m["id"], aliases=tuple(m["aliases"]), source=m["source"],
                                   checked=m["checked"], config=m["config"], files=m.get("files", {}))
                    for m in data["models"])
    by_name: dict[str, CatalogueEntry] = {}
    for entry in entries:
        for name in (entry.id, *entry.aliases):
            # a name meaning two models would make lookups order-dependent: a broken catalogue
            if by_name.setdefault(name.lower(), entry) is not entry:
                raise ValueError(f"resolver/data/models.json: '{name}' names two models")
    representatives = {arch: by_name[model_id.lower()] for arch, model_id in data["representatives"].items()}
    return _Catalogue(entries, by_name, representatives)


def catalogue() -> list[CatalogueEntry]:
    """The shipped catalogue, in file order (for listings); each config is a copy the caller may change."""
    return [replace(e, config=copy.deepcopy(dict(e.config))) for e in _load().entries]


def _from_catalogue(entry: CatalogueEntry) -> ModelSource:
    # a deep copy: callers may change the config without touching the shared catalogue
    return ModelSource(copy.deepcopy(dict(entry.config)), "catalogue", entry.source, entry.id,
                       copy.deepcopy(dict(entry.files)))


def representative(arch: str) -> ModelSource | None:
    """The catalogue model that stands for ``arch`` (exact, case-sensitive name), or None."""
    entry = _load().representatives.get(arch.strip()) if isinstance(arch, str) else None
    return None if entry is None else _from_catalogue(entry)


def hub_cache_dir(env: Mapping[str, str] | None = None) -> str:
    """The Hugging Face hub cache directory, as huggingface_hub itself derives it."""
    env = os.environ if env is None else env
    if env.get("HF_HUB_CACHE"):
        return os.path.expanduser(env["HF_HUB_CACHE"])
    if env.get("HF_HOME"):
        return os.path.join(os.path.expanduser(env["HF_HOME"]), "hub")
    xdg = env.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return os.path.join(os.path.expanduser(xdg), "huggingface", "hub")


# A Hub repo id: "name" or "org/name" of letters, digits, '.', '_', '-'.  Anything else (a second
# '/', '..', a backslash) is never looked up in the cache, so a name cannot reach outside it.
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?", re.ASCII)
_COMMIT = re.compile(r"[0-9a-f]{40,64}")
_REF_BYTES = 256  # refs/main holds one commit hash


def _is_repo_id(name: str) -> bool:
    return _REPO_ID.fullmatch(name) is not None and ".." not in name


def _read_json(path: str, what: str) -> dict[str, Any]:
    """A JSON object file of the checkpoint, bounded (resolver/safe_io.py); InputError names it."""
    try:
        data = parse_json(read_text(path), f"{what}: {path}")
    except UnreadableFile as exc:
        raise InputError(f"{what}: {exc.reason}: {path}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: {path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict):
        raise InputError(f"{what}: {path} must hold a JSON object, not {type(data).__name__}")
    return data


def read_checkpoint(path: str, what: str, origin: Origin = "path", canonical_id: str | None = None) -> ModelSource:
    """The checkpoint at ``path`` (a directory holding config.json, or the config.json file): its config
    and the CHECKPOINT_FILES beside it; InputError names ``what`` (``--model-config``, ``--model-path``)."""
    path = checked_path(path, what)
    config_path = os.path.join(path, "config.json") if os.path.isdir(path) else path
    config = _read_json(config_path, what)
    folder = os.path.dirname(config_path)
    files = {name: _read_json(os.path.join(folder, name), what) for name in CHECKPOINT_FILES
             if os.path.lexists(os.path.join(folder, name))}
    return ModelSource(config, origin, config_path, canonical_id, files)


def _snapshot_config(repo_dir: str) -> str | None:
    """The config.json of the snapshot refs/main names, else of the newest snapshot that has one."""
    snapshots = os.path.join(repo_dir, "snapshots")
    try:
        commit = read_text(os.path.join(repo_dir, "refs", "main"), _REF_BYTES).strip()
    except InputError:
        commit = ""
    if _COMMIT.fullmatch(commit):
        candidate = os.path.join(snapshots, commit, "config.json")
        if os.path.isfile(candidate):
            return candidate
    newest: tuple[float, str] | None = None
    try:
        names = sorted(os.listdir(snapshots))
    except OSError:
        return None
    for name in names:
        candidate = os.path.join(snapshots, name, "config.json")
        try:
            mtime = os.stat(candidate).st_mtime  # follows the cache's symlink into blobs/
        except OSError:
            continue
        if newest is None or mtime > newest[0]:  # ties keep the first name: deterministic
            newest = (mtime, candidate)
    return None if newest is None else newest[1]


def _from_cache(repo_id: str, cache: str, what: str) -> ModelSource | None:
    repo_dir = os.path.join(cache, "models--" + repo_id.replace("/", "--"))
    if not os.path.isdir(repo_dir):
        return None
    path = _snapshot_config(repo_dir)
    return None if path is None else read_checkpoint(path, what, "hf-cache", repo_id)


def _looks_like_path(name: str) -> bool:
    # a Hub id has at most one '/'; these shapes can only be meant as paths, so a missing file says so
    return (os.path.isabs(name) or name.startswith(("~", "./", "../")) or name.endswith(".json")
            or name.count("/") > 1 or (os.sep != "/" and os.sep in name))


def find_model(name: str, *, what: str = "--model-path", env: Mapping[str, str] | None = None) -> ModelSource:
    """Resolve what an operator passed as the model, offline; InputError says how to make it work.

    ``what`` names the input in messages (``model_path`` for batch requests); ``env`` replaces
    ``os.environ`` for the cache location (tests).
    """
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{what}: expected a model path or id, got {name!r}")
    name = checked_path(name.strip(), what)
    local = os.path.expanduser(name)
    if os.path.exists(local):
        return read_checkpoint(local, what)
    if _looks_like_path(name):
        raise InputError(f"{what}: no such file or directory: {local}")

    cat = _load()
    entry = cat.by_name.get(name.lower())
    cache = hub_cache_dir(env)
    # the id as typed first (the cache directory keeps the Hub's spelling), then the catalogue's
    # spelling of an alias or of a differently-cased id
    for repo_id in dict.fromkeys([name, *([entry.id] if entry else [])]):
        if _is_repo_id(repo_id):
            found = _from_cache(repo_id, cache, what)
            if found is not None:
                return found
    if entry is not None:
        return _from_catalogue(entry)
    raise InputError(_not_found(name, cache, what))


def _not_found(name: str, cache: str, what: str) -> str:
    cat = _load()
    spelled = {n.lower(): n for e in cat.entries for n in (e.id, *e.aliases)}  # matched any case, shown as written
    close = difflib.get_close_matches(name.lower(), list(spelled), n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(spelled[c]) for c in close)}?" if close else ""
    download = (f"`huggingface-cli download {name} config.json`" if _is_repo_id(name)
                else "`huggingface-cli download ORG/NAME`")
    return (f"{what}: '{name}' is not a local path, is not in the Hugging Face cache ({cache}) and is not a "
            f"model the resolver knows. Give a directory holding config.json (or the config.json file); or a "
            f"Hugging Face id already in the cache (the resolver never downloads: fetch it with {download}, which "
            f"stores it under $HF_HUB_CACHE, else $HF_HOME/hub); or one of the {len(cat.entries)} catalogue ids or "
            f"their short names (e.g. deepseek-ai/DeepSeek-V3, gpt-oss-120b, kimi-k2).{hint}")
