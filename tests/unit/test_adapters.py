"""The adapter data model: narrowed claims, role fallback, limits, compiled-arch probes."""
import importlib
import struct
import threading

import pytest

from resolver.adapters.base import KV_DTYPES, AdapterError, Claim, KernelAdapter, Limit, Probe, package_probe, validate
from resolver.adapters.fatbin import MAGIC, FatbinError, read_gpu_code
from resolver.adapters.registry import Registry
from resolver.loader import load_rules


def _adapter(*claims, **kw):
    return validate(KernelAdapter("t", "test family", "t-pkg", tuple(claims), **kw), "test")


def test_the_narrowest_applicable_claim_decides():
    reg = Registry([_adapter(
        Claim("attention", ("k",), "supported", ("sm80",), "general"),
        Claim("attention", ("k",), "unsupported", ("sm80",), "no fp8 here", kv_dtypes=("fp8_e4m3",)),
        Claim("attention", ("k",), "unsupported", ("sm80",), "no MLA here", mla=True),
    )], [])
    assert reg.verdict("attention", "k", "sm80", "bfloat16", False).status == "supported"
    fp8 = reg.verdict("attention", "k", "sm80", "fp8_e4m3", False)
    assert fp8.status == "unsupported" and "no fp8 here (KV fp8_e4m3)" in fp8.why
    assert "no MLA here (MLA models)" in reg.verdict("attention", "k", "sm80", "bfloat16", True).why
    assert reg.verdict("attention", "k", "sm90", "bfloat16", False).status == "unknown"


def test_prefill_decode_and_draft_read_the_attention_claims_unless_they_have_their_own():
    reg = Registry([_adapter(
        Claim("attention", ("k",), "supported", ("sm120",), "both phases"),
        Claim("attention_prefill", ("k",), "refused", ("sm120",), "no fp8 prefill", kv_dtypes=("fp8_e4m3",)),
    )], [])
    assert reg.verdict("draft", "k", "sm120").status == "supported"
    assert reg.verdict("attention_decode", "k", "sm120", "fp8_e4m3").status == "supported"
    assert reg.verdict("attention_prefill", "k", "sm120", "fp8_e4m3").status == "refused"
    assert reg.verdict("attention_prefill", "k", "sm120", "bfloat16").status == "supported"
    assert reg.verdict("dsa_decode", "k", "sm120").status == "unknown"  # no fallback across kinds of kernel


@pytest.mark.parametrize("bad, match", [
    (dict(claims=(Claim("attention", ("k",), "supported", ("sm90",), "e", kv_dtypes=("fp9",)),)), "unknown KV dtype"),
    (dict(claims=(Claim("attention", ("k",), "supported", ("sm90",), "e", mla="yes"),)), "mla must be"),
    (dict(limits=(Limit(("k",), "colours", (1,), "e"),)), "not a Limit of a known kind"),
    (dict(limits=(Limit(("k",), "page_sizes", (0, "64"), "e"),)), "positive integers"),
    (dict(limits=(Limit(("k",), "kv_dtypes", ("fp9",), "e"),)), "unknown KV dtype"),
])
def test_malformed_adapters_are_named(bad, match):
    fields = dict(claims=(Claim("attention", ("k",), "supported", ("sm90",), "e"),))
    fields.update(bad)
    with pytest.raises(AdapterError, match=f"kernel adapter 'bad'.*{match}"):
        validate(KernelAdapter("bad", "b", None, **fields), "test")


def test_adapter_kv_dtypes_are_the_options_choices():
    assert set(KV_DTYPES) == set(load_rules().options["kv_cache_dtype"].choices)


# --- compiled GPU code ------------------------------------------------------------------------------

def _fatbin(entries, ptx_kind=1):
    """A .nv_fatbin payload: one container holding (kind, sm) entries, laid out as resolver/adapters/fatbin.py says."""
    body = b""
    for kind, sm in entries:
        payload = b"\0" * 16
        header = struct.pack("<HHIQ", kind, 0x101, 64, len(payload)) + b"\0" * 12 + struct.pack("<I", sm)
        header += b"\0" * (64 - len(header))
        body += header + payload
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def _elf(sections):
    """A minimal little-endian ELF64 file with the given (name, data) sections, as a linker would lay it out."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _ in sections) + b".shstrtab\0"
    blobs, offset, headers = b"", 64, [b"\0" * 64]
    name_at = 1
    for name, data in sections + [(".shstrtab", names)]:
        headers.append(struct.pack("<IIQQQQIIQQ", name_at, 1, 0, 0, offset + len(blobs), len(data), 0, 0, 1, 0))
        name_at += len(name) + 1
        blobs += data
    shoff = 64 + len(blobs)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(headers),
                                 len(headers) - 1)
    return header + blobs + b"".join(headers)


def test_compiled_archs_are_read_from_the_fatbin(tmp_path):
    lib = tmp_path / "flash_ops.abi3.so"
    lib.write_bytes(_elf([(".text", b"\x90" * 8), (".nv_fatbin", _fatbin([(2, 80), (2, 86), (2, 90)]))]))
    code = read_gpu_code(str(lib))
    assert code.sass == (80, 86, 90) and code.ptx == ()
    assert code.describe() == "SASS sm_80, sm_86, sm_90; no PTX"
    jit = tmp_path / "jit.so"
    jit.write_bytes(_elf([(".text", b"\x90")]))
    assert read_gpu_code(str(jit)) is None  # no GPU code section: compiled at run time
    (tmp_path / "not.so").write_bytes(b"MZ not an elf")
    with pytest.raises(FatbinError, match="cannot read as an ELF library"):
        read_gpu_code(str(tmp_path / "not.so"))
    bad = tmp_path / "bad.so"
    bad.write_bytes(_elf([(".nv_fatbin", b"\x01\x02\x03\x04" * 8)]))
    with pytest.raises(FatbinError, match="bad fatbin magic"):
        read_gpu_code(str(bad))


def test_a_probe_reads_the_installed_build_and_the_verdict_uses_it(tmp_path, monkeypatch):
    pkg = tmp_path / "fakekern"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise RuntimeError('a probe must not import the package')\n")
    (pkg / "_C.abi3.so").write_bytes(_elf([(".nv_fatbin", _fatbin([(2, 90), (2, 100)]))]))
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = package_probe("fakekern", "fakekern", "_C*.so")()
    assert probe.installed and probe.archs == (90, 100) and probe.ptx == ()
    assert "_C.abi3.so: SASS sm_90, sm_100" in probe.detail
    adapter = _adapter(Claim("dsa_decode", ("k",), "supported", ("sm90", "sm100", "sm103", "sm120"),
                             "upstream says so"),
                       compiled_backends=("k",))
    reg = Registry([adapter], [], {"t": probe})
    assert reg.verdict("dsa_decode", "k", "sm100").status == "supported"
    on_120 = reg.verdict("dsa_decode", "k", "sm120")
    assert on_120.status == "unsupported" and "has sm_90, sm_100 code only and no PTX" in on_120.why
    # with PTX in the build the driver can JIT it: not refused
    ptx = Registry([adapter], [], {"t": Probe(True, "1", "x", archs=(90,), ptx=(90,))})
    assert ptx.verdict("dsa_decode", "k", "sm120").status == "supported"
    # same major is not enough: sm_103 code does not load on 10.0, sm_100 code does load on 10.3
    newer = Registry([adapter], [], {"t": Probe(True, "1", "x", archs=(103,))})
    assert newer.verdict("dsa_decode", "k", "sm100").status == "unsupported"
    older = Registry([adapter], [], {"t": Probe(True, "1", "x", archs=(100,))})
    assert older.verdict("dsa_decode", "k", "sm103").status == "supported"
    # without the probes counting (a named target platform), the build is not consulted
    assert Registry([adapter], []).verdict("dsa_decode", "k", "sm120").status == "supported"


def test_probes_run_once_per_registry_and_a_failing_one_is_reported_not_raised(monkeypatch):
    module = importlib.import_module("resolver.adapters.registry")  # the package's `registry` is the function
    monkeypatch.setattr(module, "PROBE_TIMEOUT", 0.3)
    calls = []
    release = threading.Event()  # lets the hung probe's thread end with the test

    def counted():
        calls.append(1)
        return Probe(True, "1", "ok")

    def bad_type():
        return "installed"

    def raises():
        raise OSError("unreadable")

    def hangs():
        release.wait(30)
        return Probe(True, "1", "too late")

    named = [(counted, "ok"), (bad_type, "typed"), (raises, "raises"), (hangs, "hangs")]
    reg = Registry([validate(KernelAdapter(n, n, None, (Claim("dsa_decode", ("k",), "supported", ("sm90",), "e"),),
                                           probe=p, source=f"entry point {n} = m:{n}"), "test") for p, n in named], [])
    try:
        probes = reg.probes()
        assert probes["ok"] == Probe(True, "1", "ok")
        assert "probe returned a str, not a Probe" in str(probes["typed"])
        assert "probe failed: OSError('unreadable')" in str(probes["raises"])
        assert "probe did not answer within 0.3s" in str(probes["hangs"])
        checking = reg.checking_installed()
        assert reg.probes().keys() == probes.keys() and checking is reg.checking_installed() and len(calls) == 1
        assert checking.verdict("dsa_decode", "k", "sm90").status == "unknown"
        warnings = checking.warnings()
        assert len(warnings) == 3 and all(w.code == "plugin" and w.message.startswith("plugin: kernel adapter '")
                                          for w in warnings)
        assert reg.warnings() == ()  # the probes do not count for a named target: nothing to report
    finally:
        release.set()


def test_an_adapter_name_is_one_line_of_text_and_look_alikes_are_one_name():
    from resolver.adapters.registry import _name_key

    for name in ("", "  ", "fa3\nwarning: all clear", None):
        with pytest.raises(AdapterError, match="name must be non-empty printable ASCII text"):
            validate(KernelAdapter(name, "x", None, (Claim("dsa_decode", ("k",), "supported", ("sm90",), "e"),)),
                     "test")
    with pytest.raises(AdapterError, match="its probe is a str"):
        validate(KernelAdapter("x", "x", None, (Claim("dsa_decode", ("k",), "supported", ("sm90",), "e"),),
                               probe="yes"), "test")
    assert _name_key("Flashinfer_TRTLLM") == _name_key("flashinfer-trtllm") == _name_key(" flashinfer.trtllm ")
    # issue 23 I: separators do not count at all, and a look-alike letter is no name
    assert _name_key("flash_infer") == _name_key("flash-infer") == _name_key(" flashinfer.") == _name_key("flashinfer")
    with pytest.raises(AdapterError, match="printable ASCII text, got .tr.{6}ton."):
        validate(KernelAdapter("tr\u0456ton", "x", None, (Claim("dsa_decode", ("k",), "supported", ("sm90",), "e"),)),
                 "test")


def test_every_adapter_package_is_known_to_installed_under_its_spellings():
    from resolver.adapters.registry import _builtin_adapters
    from resolver.installed import INSTALLED_FACTS, PACKAGES, canonical_package

    known = {p.name for p in PACKAGES}
    assert {a.package for a in _builtin_adapters() if a.package} <= known
    assert "installed.flashinfer" in INSTALLED_FACTS  # what rules/attention.yaml reads
    for spelling, package in [("flashinfer", "flashinfer-python"), ("FlashInfer_Python", "flashinfer-python"),
                              ("flash_mla", "sgl-flash-mla"), ("sgl_kernel", "sglang-kernel"),
                              ("sgl-kernel", "sglang-kernel"), ("aiter", "amd-aiter"), ("torch_npu", "torch-npu")]:
        assert canonical_package(spelling) == package, spelling
    assert canonical_package("flash-attn") is None and canonical_package("fa3") is None


def test_an_absent_package_makes_its_kernels_unsupported_and_leaves_refusals_alone():
    reg = Registry([_adapter(
        Claim("attention", ("k",), "supported", ("sm80",), "runs"),
        Claim("attention", ("k",), "unsupported", ("sm90",), "no code for it"),
        Claim("attention", ("k",), "refused", ("sm100",), "SGLang refuses it"),
    )], [])
    absent = {"t-pkg": "--installed t-pkg=no"}
    gone = reg.verdict("attention", "k", "sm80", absent=absent)
    assert (gone.status, gone.adapter) == ("unsupported", "t")
    assert gone.why == "package t-pkg is not installed on the target (--installed t-pkg=no) [adapter t, built-in]"
    assert "no code for it" in reg.verdict("attention", "k", "sm90", absent=absent).why  # its own evidence stays
    assert reg.verdict("attention", "k", "sm100", absent=absent).status == "refused"
    # no claim on sm120 (unknown), but nothing of this package runs without it
    assert reg.verdict("attention_decode", "k", "sm120", absent=absent).status == "unsupported"
    assert reg.verdict("attention", "k", "sm120").status == "unknown"
    assert reg.verdict("attention", "other", "sm80", absent=absent).status == "unknown"  # no adapter serves it
    assert reg.verdict("attention", "k", "sm80", absent={"x-pkg": "--installed x-pkg=no"}).status == "supported"


def test_a_claim_of_an_adapter_with_another_package_outlives_the_absence():
    builtin = _adapter(Claim("dsa_decode", ("k",), "unsupported", ("sm120",), "no SM120 build"))
    vendor = validate(KernelAdapter("v", "vendor build", "v-pkg", (Claim("dsa_decode", ("k",), "supported", ("sm120",),
                                                                         "vendor notes"),)), "entry point v")
    reg = Registry([builtin, vendor], [])
    assert reg.verdict("dsa_decode", "k", "sm120", absent={"t-pkg": "--installed t-pkg=no"}).status == "supported"
    assert reg.verdict("dsa_decode", "k", "sm120", absent={"v-pkg": "--installed v-pkg=no"}).status == "unsupported"


def test_a_delegated_claim_is_neither_refused_nor_unknown():
    reg = Registry([_adapter(Claim("attention", ("d",), "delegated", ("sm90",), "runs the kernels of other options",
                                   mla=True))], [])
    assert reg.verdict("attention", "d", "sm90", None, True).status == "delegated"
    assert reg.verdict("attention", "d", "sm90", None, False).status == "unknown"
