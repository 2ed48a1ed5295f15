"""FlashInfer's TRT-LLM engines: ``trtllm_mha``, ``trtllm_mla`` and the DSA ``trtllm`` backend.
trtllm-gen runs on SM100/103/107, XQA decodes on SM90/SM100/SM12x (XQA-MLA on SM12x only),
fmha_v2 prefills on SM90 and SM12x.  Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import ROCM, SM8X, SM10X, SM12X, SM90, SM110
from .base import Claim, KernelAdapter, Limit, package_probe

_WHY = ("S9: the DSA trtllm path always passes backend 'trtllm-gen'; B7: the trtllm-gen runner accepts "
        "SM 100/103/107 only (\"TllmGenFmhaRunner ... Unsupported architecture\"); GH1, GH2")
_MHA_GATE = "S33: SGLang accepts trtllm_mha only on is_sm90, is_sm100 or is_sm120"
_MLA_GATE = "S31, S35: SGLang accepts trtllm_mla only on is_blackwell (majors 10-12)"

ADAPTER = KernelAdapter(
    name="flashinfer-trtllm",
    family="FlashInfer TRT-LLM engines: trtllm-gen, XQA, fmha_v2",
    package="flashinfer-python",
    claims=(
        Claim("dsa_prefill", ("trtllm",), "supported", SM10X, "B7: trtllm-gen runs on SM100/103"),
        Claim("dsa_decode", ("trtllm",), "supported", SM10X, "B7: trtllm-gen runs on SM100/103"),
        Claim("dsa_prefill", ("trtllm",), "unsupported", SM8X + SM90 + SM12X, "R1/R2/R3: " + _WHY),
        Claim("dsa_decode", ("trtllm",), "unsupported", SM8X + SM90 + SM12X, "R1/R2/R3: " + _WHY),
        Claim("dsa_prefill", ("trtllm",), "unsupported", SM110, "R4: " + _WHY),
        Claim("dsa_decode", ("trtllm",), "unsupported", SM110, "R4: " + _WHY),
        Claim("dsa_prefill", ("trtllm",), "unsupported", ROCM, "FlashInfer is CUDA only (B13)"),
        Claim("dsa_decode", ("trtllm",), "unsupported", ROCM, "FlashInfer is CUDA only (B13)"),
        Claim("attention", ("trtllm_mha",), "supported", SM90 + SM12X,
              "S19, B12: XQA decode and fmha_v2 prefill", kv_dtypes=("auto", "bf16", "bfloat16")),
        Claim("attention", ("trtllm_mha",), "supported", SM10X, "S19, B7: trtllm-gen",
              kv_dtypes=("auto", "bf16", "bfloat16", "fp8_e4m3", "nvfp4")),
        Claim("attention", ("trtllm_mha",), "supported", SM90, "S33, B12: fp8 on SM90", kv_dtypes=("fp8_e4m3",)),
        Claim("attention", ("trtllm_mha",), "refused", SM8X + SM110 + ROCM, _MHA_GATE),
        Claim("attention_decode", ("trtllm_mha",), "supported", SM12X, "S33, B12: XQA decode reads fp8 and nvfp4",
              kv_dtypes=("fp8_e4m3", "nvfp4")),
        *(Claim(role, ("trtllm_mha",), "refused", SM12X,
                "S33: \"TRTLLM FMHAv2 prefill on SM120 does not support fp8_e4m3 KV cache or skip-softmax.\"",
                kv_dtypes=("fp8_e4m3",)) for role in ("attention", "attention_prefill")),
        Claim("attention", ("trtllm_mla",), "supported", SM10X, "B7, B8: trtllm-gen MLA prefill and decode"),
        Claim("attention_decode", ("trtllm_mla",), "supported", SM12X,
              "B8, S20, GH7: FlashInfer's 'auto' picks XQA MLA on SM120/SM121 (bf16 or fp8, no sinks)"),
        # trtllm_mla prefill on SM12x: unknown (R11, weak); no "attention" claim there
        Claim("attention", ("trtllm_mla",), "refused", SM8X + SM90 + ROCM, _MLA_GATE),
        Claim("attention", ("trtllm_mla",), "unsupported", SM110,
              "R10: is_blackwell lets SM110 through (S31, S35); FlashInfer's 'auto' sends it to XQA, which raises "
              "\"XQA MLA requires SM120a (CUDA >= 12.8) or SM121a\" (B8, M8); trtllm-gen prefill is SM100/103/107 "
              "(B7)"),
    ),
    limits=(
        Limit(("trtllm_mha",), "page_sizes", (16, 32, 64, 128), "S31, S19", "other sizes snap to 64"),
        Limit(("trtllm_mla",), "page_sizes", (32, 64), "S31, B8"),
        Limit(("trtllm_mla",), "kv_dtypes", ("auto", "bf16", "fp8_e4m3"), "S31",
              "the spelling bfloat16 is refused (S31)"),
        Limit(("trtllm_mha",), "kv_dtypes", ("auto", "bf16", "bfloat16", "fp8_e4m3", "nvfp4"), "S19, S33, S34",
              "nvfp4 natively on SM100; SM12x through XQA decode; no fp8 prefill on SM12x"),
        Limit(("trtllm",), "kv_dtypes", ("fp8_e4m3", "bfloat16"), "S29", "bf16 for decode only"),
        Limit(("trtllm_mha",), "head_dims", ("<=256",), "B12", "XQA fp8 on SM90; elsewhere unknown"),
    ),
    probe=package_probe("flashinfer-python", "flashinfer"),
)
