"""PyTorch's own attention: ``torch_native`` (SDPA) and ``flex_attention``.  flex_attention's
per-arch status is unknown, so only its limits are declared.
Evidence: the ids cited are in docs/evidence.md."""
from ._platforms import ALL
from .base import Claim, KernelAdapter, Limit, package_probe

ADAPTER = KernelAdapter(
    name="torch",
    family="PyTorch SDPA (torch_native) and flex_attention",
    package="torch",
    claims=(
        Claim("attention", ("torch_native",), "supported", ALL,
              "S27: SDPA wherever torch runs; K/V are cast to the query dtype (fp8 through a cast)", "medium"),
    ),
    limits=(
        Limit(("torch_native", "flex_attention"), "kv_dtypes",
              ("auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2", "fp4_mx_block16"), "S27, U10",
              "torch_native casts fp8 to the query dtype; flex_attention fp8 is unknown"),
    ),
    probe=package_probe("torch", "torch"),
)
