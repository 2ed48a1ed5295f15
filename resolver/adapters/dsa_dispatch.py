"""SGLang's ``dsa`` attention backend (deprecated spelling ``nsa``): it runs no attention kernel of its
own but the kernels of ``--dsa-prefill-backend`` and ``--dsa-decode-backend`` (and DeepGEMM's indexer,
which has no option; see docs/kernels.md).  Its verdict is "delegated": the DSA options' own verdicts
decide, so a DSA model is not reported as running an unknown kernel.
Evidence: S13 in docs/evidence.md."""
from ._platforms import ALL
from .base import Claim, KernelAdapter

ADAPTER = KernelAdapter(
    name="dsa-dispatch",
    family="SGLang's DSA attention backend (dispatches to the DSA prefill and decode kernels)",
    package=None,  # part of SGLang itself
    # DSA models are MLA models: for any other model there is nothing to dispatch to (unknown, no claim)
    claims=(Claim("attention", ("dsa",), "delegated", ALL,
                  "S13: dsa runs the kernels of the DSA prefill and decode backends, which have "
                  "verdicts of their own", mla=True),),
)
