"""FlashInfer's TRT-LLM engines as DSA backends (``trtllm``): trtllm-gen only, hard-coded.
Evidence: shared/reference/kernels.md section 2.5 (ids as there)."""
from ._platforms import ROCM, SM8X, SM10X, SM12X, SM90
from .base import Claim, KernelAdapter, package_probe

_WHY = ("S9: the DSA trtllm path always passes backend 'trtllm-gen'; B7: the trtllm-gen runner accepts "
        "SM 100/103/107 only (\"TllmGenFmhaRunner ... Unsupported architecture\"); GH1, GH2")

ADAPTER = KernelAdapter(
    name="flashinfer-trtllm",
    family="FlashInfer TRT-LLM engines (trtllm-gen) as the DSA trtllm backend",
    package="flashinfer-python",
    claims=(
        Claim("dsa_prefill", ("trtllm",), "supported", SM10X, "B7: trtllm-gen runs on SM100/103"),
        Claim("dsa_decode", ("trtllm",), "supported", SM10X, "B7: trtllm-gen runs on SM100/103"),
        Claim("dsa_prefill", ("trtllm",), "unsupported", SM8X + SM90 + SM12X, "R1/R2/R3: " + _WHY),
        Claim("dsa_decode", ("trtllm",), "unsupported", SM8X + SM90 + SM12X, "R1/R2/R3: " + _WHY),
        Claim("dsa_prefill", ("trtllm",), "unsupported", ROCM, "FlashInfer is CUDA only"),
        Claim("dsa_decode", ("trtllm",), "unsupported", ROCM, "FlashInfer is CUDA only"),
    ),
    probe=package_probe("flashinfer-python", "flashinfer"),
)
