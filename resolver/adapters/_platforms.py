"""Platform groups the adapters' claims use (contract names)."""
SM8X = ("sm80", "sm86", "sm89")
SM90 = ("sm90",)
SM10X = ("sm100", "sm103")
SM110 = ("sm110",)  # not a contract platform: --compute-capability 11.0 (docs/kernels.md)
SM12X = ("sm120", "sm121")
ROCM = ("gfx942", "gfx950")
CUDA = SM8X + SM90 + SM10X + SM110 + SM12X
ALL = CUDA + ROCM
BF16 = ("auto", "bf16", "bfloat16")  # "auto" stores the model dtype (bf16 for the models in scope)
