"""The launch as typed data: one LaunchRequest from each front door, frozen, changed only into a new one."""
import dataclasses

import pytest

from resolver.argv import launch_request as from_argv
from resolver.argv import parse
from resolver.core import LaunchRequest, get_engine, resolve, resolve_request
from resolver.errors import InputError
from resolver.json_request import launch_request as from_json

ARGV = ["--platform", "h100", "--model-arch", "DeepseekV3ForCausalLM", "--tp", "8", "--kv-cache-dtype", "fp8_e4m3"]
JSON = {"platform": "h100", "model_arch": "DeepseekV3ForCausalLM", "args": {"tp_size": 8, "kv_cache_dtype": "fp8_e4m3"}}


def test_each_front_door_builds_the_same_launch():
    engine = get_engine()
    argv, json_ = from_argv(engine, parse(ARGV, engine.pack)), from_json(JSON)
    assert isinstance(argv, LaunchRequest) and isinstance(json_, LaunchRequest)
    assert dict(argv.args) == {"tp_size": "8", "kv_cache_dtype": "fp8_e4m3"}  # as typed: the core coerces
    assert dict(json_.args) == JSON["args"]
    assert set(argv.flags) == {"tp_size", "kv_cache_dtype"} and not json_.flags  # the spellings typed
    api = resolve_request(engine, platform="h100", model_arch="DeepseekV3ForCausalLM", args=JSON["args"])
    assert resolve(engine, argv).values == resolve(engine, json_).values == api.values


def test_a_launch_is_frozen_and_its_options_read_only():
    args = {"tp_size": 8}
    launch = LaunchRequest("h100", args, model_arch="LlamaForCausalLM")
    args["tp_size"] = 2  # the caller's dict: a copy was taken
    assert launch.args["tp_size"] == 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        launch.strict = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        launch.args["tp_size"] = 4  # type: ignore[index]
    with pytest.raises(InputError, match="args must be a mapping"):
        LaunchRequest("h100", ["--tp", "8"])  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"unknown request field\(s\) \['tp'\]"):
        LaunchRequest.of("h100", tp=8)


def test_a_changed_launch_is_a_new_one_without_the_changed_options_spellings():
    launch = LaunchRequest("h100", {"tp_size": 8, "kv_cache_dtype": "fp8_e4m3", "page_size": 64},
                           flags={"tp_size": "--tp", "kv_cache_dtype": "--kv-cache-dtype", "page_size": "--page-size"})
    changed = launch.changed({"kv_cache_dtype": "bfloat16"}, ("page_size",), strict=True)
    assert dict(changed.args) == {"tp_size": 8, "kv_cache_dtype": "bfloat16"} and changed.strict
    assert changed.flags == {"tp_size": "--tp"}  # only the untouched option keeps the spelling typed
    assert dict(launch.args) == {"tp_size": 8, "kv_cache_dtype": "fp8_e4m3", "page_size": 64} and not launch.strict
