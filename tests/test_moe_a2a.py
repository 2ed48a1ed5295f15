"""Expert parallelism and the MoE all-to-all (rules/moe_a2a.yaml) and the parallel layout (rules/parallel.yaml:
nodes, the LM head under data parallelism, decode context parallelism, FlashInfer's all-reduce fusion).

Every expected value and refusal below is SGLang 0.5.23's own answer for the same request (the oracle,
docs/parity.md: ``{"platform": P, "model": <catalogued config>, "args": A}`` given to ``oracle/ask.py``, with
``platform_overrides.gpu_memory_gb`` where a memory is given), recorded when the rules were written;
``test_the_table_is_sglangs_answer`` asks the oracle again when it is installed.  A value SGLang does not
declare is what was typed, else SGLang's default.  The first case is the launch of the issue: DeepSeek-V3.2 FP8
on 8 H200 with the deprecated ``--dp 8 --enable-dp-attention`` and DeepEP.
"""

import pytest

from resolver.api import get_engine, resolve_request
from resolver.catalogue import catalogue

from .conftest import CATALOGUE
from .oracle import ORACLE, oracle_python

DSV32 = CATALOGUE["deepseek-ai/DeepSeek-V3.2"]
DSV3 = CATALOGUE["deepseek-ai/DeepSeek-V3"]
QWEN_MOE = CATALOGUE["Qwen/Qwen3-30B-A3B"]
LLAMA = CATALOGUE["meta-llama/Llama-3.1-8B-Instruct"]
GPT_OSS = CATALOGUE["openai/gpt-oss-20b"]

FIELDS = ("ep_size", "attn_dp_size", "dp_size", "deepep_mode", "moe_a2a_backend", "moe_runner_backend",
          "chunked_prefill_size", "schedule_conservativeness", "disable_shared_experts_fusion", "enable_dp_lm_head",
          "enable_tp_lm_head_all_to_all", "dcp_comm_backend", "flashinfer_allreduce_fusion_backend",
          "disable_overlap_schedule")
#: SGLang's answer for a single-node Hopper launch with none of these set; each case lists what differs
BASE = {"ep_size": 1, "attn_dp_size": 1, "dp_size": 1, "deepep_mode": "auto", "moe_a2a_backend": "none",
        "moe_runner_backend": "auto", "chunked_prefill_size": 8192, "schedule_conservativeness": 1.0,
        "disable_shared_experts_fusion": False, "enable_dp_lm_head": False, "enable_tp_lm_head_all_to_all": False,
        "dcp_comm_backend": "ag_rs", "flashinfer_allreduce_fusion_backend": None, "disable_overlap_schedule": False}

# (case, platform, GPU memory in GB or None for the platform's card, model, typed args, SGLang's values apart from BASE)
CASES = [
    ('issue-dsv32-fp8-h200-deepep', 'sm90', 141, DSV32, {'tp_size': 8, 'dp_size': 8, 'enable_dp_attention': True,
                                                         'moe_a2a_backend': 'deepep', 'quantization': 'fp8'},
     {'ep_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'deepep', 'chunked_prefill_size': 1024,
      'schedule_conservativeness': 0.3}),
    ('qwen-deepep-tp8', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'deepep'},
     {'ep_size': 8, 'moe_a2a_backend': 'deepep'}),
    ('qwen-mooncake-ep2', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'ep_size': 2, 'moe_a2a_backend': 'mooncake'},
     {'ep_size': 4, 'moe_a2a_backend': 'mooncake'}),
    ('qwen-nixl', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'nixl'},
     {'ep_size': 8, 'moe_a2a_backend': 'nixl'}),
    ('llama-deepep', 'sm90', None, LLAMA, {'tp_size': 2, 'moe_a2a_backend': 'deepep'},
     {'ep_size': 2, 'moe_a2a_backend': 'deepep'}),
    ('qwen-pplx-attn-dp', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'pplx',
                                                   'chunked_prefill_size': 1024},
     {'ep_size': 8, 'attn_dp_size': 8, 'deepep_mode': 'low_latency', 'moe_a2a_backend': 'pplx',
      'moe_runner_backend': 'deep_gemm', 'chunked_prefill_size': 128, 'schedule_conservativeness': 0.3}),
    ('qwen-flashinfer-a2a', 'sm100', None, QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'flashinfer',
                                                      'moe_runner_backend': 'flashinfer_trtllm'},
     {'ep_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'flashinfer', 'moe_runner_backend': 'flashinfer_trtllm',
      'chunked_prefill_size': 2048, 'schedule_conservativeness': 0.3, 'disable_shared_experts_fusion': True}),
    ('dsv3-deepep-cutedsl', 'sm100', None, DSV3, {'tp_size': 8, 'moe_a2a_backend': 'deepep',
                                                  'moe_runner_backend': 'flashinfer_cutedsl',
                                                  'quantization': 'modelopt_fp4'},
     {'ep_size': 8, 'deepep_mode': 'low_latency', 'moe_a2a_backend': 'deepep',
      'moe_runner_backend': 'flashinfer_cutedsl', 'chunked_prefill_size': 16384,
      'disable_shared_experts_fusion': True}),
    ('qwen-mori', 'gfx942', None, QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'mori', 'chunked_prefill_size': 4096},
     {'ep_size': 8, 'deepep_mode': 'normal', 'moe_a2a_backend': 'mori', 'chunked_prefill_size': 4096}),
    ('qwen-mori-low-latency', 'gfx942', None, QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'mori',
                                                         'chunked_prefill_size': 4096, 'deepep_mode': 'low_latency'},
     {'ep_size': 8, 'deepep_mode': 'low_latency', 'moe_a2a_backend': 'mori', 'chunked_prefill_size': 4096}),
    ('qwen-megamoe', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'megamoe'},
     {'ep_size': 8, 'moe_a2a_backend': 'megamoe'}),
    ('qwen-ep4', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'ep_size': 4},
     {'ep_size': 4, 'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-pp2', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'pp_size': 2},
     {'flashinfer_allreduce_fusion_backend': 'auto', 'disable_overlap_schedule': True}),
    ('qwen-dp-lm-head-alone', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'enable_dp_lm_head': True},
     {'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-dp-lm-head-attn-dp', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'attn_dp_size': 4, 'enable_dp_lm_head': True},
     {'attn_dp_size': 4, 'chunked_prefill_size': 2048, 'schedule_conservativeness': 0.3, 'enable_dp_lm_head': True}),
    ('qwen-dcp-hopper', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'dcp_size': 2},
     {'dcp_comm_backend': 'a2a', 'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-dcp-blackwell', 'sm100', None, QWEN_MOE, {'tp_size': 4, 'dcp_size': 2},
     {'moe_runner_backend': 'flashinfer_trtllm', 'chunked_prefill_size': 16384, 'disable_shared_experts_fusion': True,
      'dcp_comm_backend': 'fi_a2a', 'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-dcp-blackwell-nodes', 'sm100', None, QWEN_MOE, {'tp_size': 4, 'dcp_size': 8, 'nnodes': 2},
     {'moe_runner_backend': 'flashinfer_trtllm', 'chunked_prefill_size': 16384, 'disable_shared_experts_fusion': True,
      'dcp_comm_backend': 'a2a', 'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-decode-pure-attn-dp', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8,
                                                          'disaggregation_mode': 'decode'},
     {'attn_dp_size': 8, 'chunked_prefill_size': 1024, 'schedule_conservativeness': 0.3,
      'enable_tp_lm_head_all_to_all': True}),
    ('qwen-decode-pure-attn-dp-dp-lm-head', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8,
                                                                     'disaggregation_mode': 'decode',
                                                                     'enable_dp_lm_head': True},
     {'attn_dp_size': 8, 'chunked_prefill_size': 1024, 'schedule_conservativeness': 0.3, 'enable_dp_lm_head': True}),
    ('llama-deprecated-allreduce-fusion', 'sm90', None, LLAMA, {'tp_size': 2,
                                                                'enable_flashinfer_allreduce_fusion': True},
     {'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-deterministic-allreduce-fusion', 'sm90', None, QWEN_MOE, {'tp_size': 2,
                                                                     'enable_deterministic_inference': True},
     {}),
    ('qwen-attn-dp-allreduce-fusion', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'attn_dp_size': 2},
     {'attn_dp_size': 2, 'chunked_prefill_size': 4096, 'schedule_conservativeness': 0.3}),
    ('qwen-hopper-two-nodes', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'nnodes': 2},
     {}),
    ('qwen-blackwell-two-nodes', 'sm100', None, QWEN_MOE, {'tp_size': 4, 'nnodes': 2},
     {'moe_runner_backend': 'flashinfer_trtllm', 'chunked_prefill_size': 16384, 'disable_shared_experts_fusion': True,
      'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-typed-attn-dp-one', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'dp_size': 4, 'enable_dp_attention': True,
                                                        'attn_dp_size': 1},
     {'attn_dp_size': 4, 'chunked_prefill_size': 2048, 'schedule_conservativeness': 0.3}),
    ('qwen-fi-megamoe-nvfp4', 'sm100', None, QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8,
                                                        'moe_a2a_backend': 'flashinfer_megamoe',
                                                        'quantization': 'modelopt_fp4'},
     {'ep_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'flashinfer_megamoe',
      'moe_runner_backend': 'flashinfer_megamoe', 'chunked_prefill_size': 2048, 'schedule_conservativeness': 0.3,
      'disable_shared_experts_fusion': True}),
    ('qwen-megamoe-runner', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'moe_runner_backend': 'megamoe'},
     {'ep_size': 8, 'moe_a2a_backend': 'megamoe'}),
    ('qwen-megamoe-runner-deepep', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'moe_runner_backend': 'megamoe',
                                                            'moe_a2a_backend': 'deepep'},
     {'ep_size': 8, 'moe_a2a_backend': 'megamoe'}),
    ('gptoss-megamoe-runner', 'sm100', None, GPT_OSS, {'tp_size': 4, 'moe_runner_backend': 'megamoe'},
     {'ep_size': 4, 'moe_a2a_backend': 'megamoe', 'moe_runner_backend': 'flashinfer_mxfp4',
      'chunked_prefill_size': 16384}),
    ('qwen-prefill-cp-interleave', 'sm90', None, QWEN_MOE, {'tp_size': 4, 'enable_prefill_cp': True,
                                                            'cp_strategy': 'interleave'},
     {'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('llama-prefill-cp-zigzag', 'sm90', None, LLAMA, {'tp_size': 4, 'enable_prefill_cp': True, 'cp_strategy': 'zigzag'},
     {}),
    ('qwen-dense-tp-1', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'moe_dense_tp_size': 1},
     {'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-dense-tp-8', 'sm90', None, QWEN_MOE, {'tp_size': 8, 'moe_dense_tp_size': 8},
     {'flashinfer_allreduce_fusion_backend': 'auto'}),
    ('qwen-megamoe-blackwell-8192', 'sm100', None, QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'megamoe',
                                                              'chunked_prefill_size': 8192},
     {'ep_size': 8, 'moe_a2a_backend': 'megamoe'}),
    ('qwen-megamoe-blackwell-decode', 'sm100', None, QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'megamoe',
                                                                'disaggregation_mode': 'decode'},
     {'ep_size': 8, 'moe_a2a_backend': 'megamoe', 'chunked_prefill_size': 16384}),
    ('qwen-megamoe-blackwell-attn-dp', 'sm100', None, QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8,
                                                                 'moe_a2a_backend': 'megamoe'},
     {'ep_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'megamoe', 'chunked_prefill_size': 2048,
      'schedule_conservativeness': 0.3}),
    ('dsv3-megamoe-blackwell', 'sm100', None, DSV3, {'tp_size': 8, 'moe_a2a_backend': 'megamoe'},
     {'ep_size': 8, 'moe_a2a_backend': 'megamoe', 'chunked_prefill_size': 16384}),
]

# (case, platform, model, typed args, a phrase of SGLang's refusal)
REFUSED = [
    ('qwen-mori-chunk', 'gfx942', QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'mori'},
     'SGLANG_MORI_NUM_MAX_DISPATCH_TOKENS_PER_RANK'),
    ('qwen-pplx-no-attn-dp', 'sm90', QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'pplx'},
     "moe_a2a_backend='pplx' requires attention DP with at least 2 groups"),
    ('qwen-pplx-chunk', 'sm90', QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'pplx'},
     'SGLANG_PPLX_NUM_MAX_DISPATCH_TOKENS_PER_RANK'),
    ('qwen-pplx-normal', 'sm90', QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'pplx',
                                            'deepep_mode': 'normal', 'chunked_prefill_size': 1024},
     "moe_a2a_backend='pplx' only supports low-latency mode"),
    ('gpt-oss-pplx-mxfp4', 'sm100', GPT_OSS, {'tp_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'pplx',
                                              'chunked_prefill_size': 1024},
     "moe_a2a_backend='pplx' is only supported with --moe-runner-backend"),
    ('qwen-flashinfer-no-attn-dp', 'sm100', QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'flashinfer'},
     'Flashinfer MoE A2A requires --attn-dp-size equal to --tp-size, except'),
    ('qwen-flashinfer-auto-runner', 'sm100', QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8,
                                                        'moe_a2a_backend': 'flashinfer'},
     'FlashInfer MoE A2A is supported with flashinfer_cutlass,'),
    ('qwen-flashinfer-no-chunks', 'sm100', QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'flashinfer',
                                                      'moe_runner_backend': 'flashinfer_trtllm',
                                                      'chunked_prefill_size': -1},
     'FlashInfer MoE A2A requires chunked prefill: eager prefill dispatches'),
    ('qwen-megamoe-ampere', 'sm80', QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'megamoe'},
     '--moe-a2a-backend megamoe needs a CUDA SM90 GPU'),
    ('qwen-megamoe-runner-ampere', 'sm80', QWEN_MOE, {'tp_size': 8, 'moe_runner_backend': 'megamoe'},
     'needs a CUDA SM90 GPU (block-FP8 experts)'),
    ('dsv3-deepep-cutedsl-normal', 'sm100', DSV3, {'tp_size': 8, 'moe_a2a_backend': 'deepep',
                                                   'moe_runner_backend': 'flashinfer_cutedsl',
                                                   'quantization': 'modelopt_fp4', 'deepep_mode': 'normal'},
     'flashinfer_cutedsl FP4 MoE only supports DeepEP low_latency dispatch'),
    ('qwen-flashinfer-cutlass-ep', 'sm100', QWEN_MOE, {'tp_size': 8, 'ep_size': 4,
                                                       'moe_runner_backend': 'flashinfer_cutlass'},
     'The expert parallel size must be 1 or the same as the tensor parallel'),
    ('qwen-deepep-flashinfer-cutlass-ep', 'sm100', QWEN_MOE, {'tp_size': 8, 'ep_size': 4, 'moe_a2a_backend': 'deepep',
                                                              'moe_runner_backend': 'flashinfer_cutlass'},
     'The expert parallel size must be 1 or the same as the tensor parallel'),
    ('qwen-cutlass-fp8-ep', 'sm90', QWEN_MOE, {'tp_size': 8, 'ep_size': 8, 'moe_runner_backend': 'cutlass',
                                               'quantization': 'fp8'},
     'FP8/MXFP8 Cutlass MoE is only supported with ep_size == 1'),
    ('gpt-oss-triton-kernel-ep', 'sm90', GPT_OSS, {'tp_size': 2, 'ep_size': 2, 'moe_runner_backend': 'triton_kernel'},
     'Triton kernel MoE is only supported when ep_size == 1'),
    ('qwen-nodes', 'sm90', QWEN_MOE, {'tp_size': 4, 'nnodes': 3},
     'tp_size must be divisible by number of nodes'),
    ('qwen-replicas-nodes', 'sm90', QWEN_MOE, {'tp_size': 4, 'dp_size': 2, 'nnodes': 2},
     'multi-node data-parallel replicas are not supported'),
    ('qwen-replicas-dp-lm-head', 'sm90', QWEN_MOE, {'tp_size': 4, 'dp_size': 2, 'enable_dp_lm_head': True},
     '--enable-dp-lm-head requires attention DP'),
    ('qwen-tp-lm-head-a2a-no-attn-dp', 'sm90', QWEN_MOE, {'tp_size': 4, 'enable_tp_lm_head_all_to_all': True},
     '--enable-tp-lm-head-all-to-all requires attention DP'),
    ('qwen-tp-lm-head-a2a-dp-lm-head', 'sm90', QWEN_MOE, {'tp_size': 4, 'attn_dp_size': 4, 'enable_dp_lm_head': True,
                                                          'enable_tp_lm_head_all_to_all': True},
     '--enable-tp-lm-head-all-to-all uses a TP-sharded LM head and is'),
    ('qwen-tp-lm-head-a2a-partial-dp', 'sm90', QWEN_MOE, {'tp_size': 4, 'attn_dp_size': 2,
                                                          'enable_tp_lm_head_all_to_all': True},
     '--enable-tp-lm-head-all-to-all currently requires tp_size =='),
    ('qwen-dcp-prefill-cp', 'sm90', QWEN_MOE, {'tp_size': 4, 'dcp_size': 2, 'enable_prefill_cp': True},
     '--dcp-size > 1 does not support --enable-prefill-cp.'),
    ('qwen-dcp-comm-without-dcp', 'sm90', QWEN_MOE, {'tp_size': 4, 'dcp_comm_backend': 'a2a'},
     '--dcp-comm-backend a2a only affects the decode context-parallel'),
    ('qwen-fi-a2a-rocm', 'gfx942', QWEN_MOE, {'tp_size': 4, 'dcp_size': 2, 'dcp_comm_backend': 'fi_a2a'},
     "--dcp-comm-backend fi_a2a delegates the exchange to FlashInfer's"),
    ('qwen-dspark-attn-dp', 'sm90', QWEN_MOE, {'tp_size': 4, 'attn_dp_size': 4, 'speculative_algorithm': 'DSPARK'},
     'DSpark with dp attention requires --enable-dp-lm-head.'),
    ('qwen-fi-megamoe-hopper', 'sm90', QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8,
                                                  'moe_a2a_backend': 'flashinfer_megamoe',
                                                  'quantization': 'modelopt_fp4'},
     'FlashInfer MegaMOE currently requires an SM100-family CUDA device for'),
    ('qwen-fi-megamoe-no-dp', 'sm100', QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'flashinfer_megamoe',
                                                  'quantization': 'modelopt_fp4'},
     'FlashInfer MegaMOE is only supported with --attn-dp-size equal to'),
    ('llama-fi-megamoe', 'sm100', LLAMA, {'tp_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'flashinfer_megamoe',
                                          'quantization': 'modelopt_fp4'},
     'FlashInfer MegaMOE is not validated for model architectures'),
    ('qwen-fi-megamoe-triton', 'sm100', QWEN_MOE, {'tp_size': 8, 'attn_dp_size': 8,
                                                   'moe_a2a_backend': 'flashinfer_megamoe',
                                                   'quantization': 'modelopt_fp4', 'moe_runner_backend': 'triton'},
     'FlashInfer MegaMOE a2a backend requires --moe-runner-backend'),
    ('dsv3-fi-megamoe-sm100', 'sm100', DSV3, {'tp_size': 8, 'attn_dp_size': 8, 'moe_a2a_backend': 'flashinfer_megamoe'},
     'FlashInfer MegaMOE currently supports only MXFP8, ModelOpt NVFP4,'),
    ('qwen-prefill-cp-no-strategy', 'sm90', QWEN_MOE, {'tp_size': 4, 'enable_prefill_cp': True},
     '--cp-strategy must be set when --enable-prefill-cp is enabled.'),
    ('dsv32-prefill-cp-zigzag', 'sm90', DSV32, {'tp_size': 8, 'enable_prefill_cp': True, 'cp_strategy': 'zigzag'},
     'DeepSeek V3.2 prefill CP does not support --cp-strategy zigzag'),
    ('qwen-prefill-cp-rocm', 'gfx942', QWEN_MOE, {'tp_size': 4, 'enable_prefill_cp': True, 'cp_strategy': 'interleave'},
     'Prefill CP on HIP is only supported for DeepseekV4ForCausalLM, got'),
    ('qwen-dense-tp-2', 'sm90', QWEN_MOE, {'tp_size': 8, 'moe_dense_tp_size': 2},
     'moe_dense_tp_size only supports None, 1, or tp_size currently'),
    ('qwen-megamoe-blackwell-chunk', 'sm100', QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'megamoe'},
     'Qwen3MoeForCausalLM with MegaMoE requires'),
    ('qwen-megamoe-no-chunks', 'sm90', QWEN_MOE, {'tp_size': 8, 'moe_a2a_backend': 'megamoe',
                                                  'chunked_prefill_size': -1},
     'Qwen3MoeForCausalLM with MegaMoE requires chunked prefill to be'),
    ('dsv32-megamoe-nvfp4', 'sm100', DSV32, {'tp_size': 4, 'moe_a2a_backend': 'megamoe',
                                             'quantization': 'modelopt_fp4'},
     'DeepseekV32ForCausalLM with MegaMoE requires'),
    ('qwen-megamoe-tp3', 'sm90', QWEN_MOE, {'tp_size': 3, 'moe_a2a_backend': 'megamoe', 'chunked_prefill_size': 8192},
     'Qwen3MoeForCausalLM with MegaMoE requires'),
]


def _resolve(platform, memory, model, args):
    return resolve_request(get_engine(), platform=platform, model=dict(model), args=args, gpu_memory_gb=memory,
                           fixes=False)


@pytest.mark.parametrize("case, platform, memory, model, args, expected", CASES, ids=[c[0] for c in CASES])
def test_values_are_sglangs(case, platform, memory, model, args, expected):
    res = _resolve(platform, memory, model, args)
    assert not res.conflicts, [c.message for c in res.conflicts]
    assert {f: res.values[f] for f in FIELDS} == {**BASE, **expected}


@pytest.mark.parametrize("case, platform, model, args, phrase", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_as_sglang_refuses(case, platform, model, args, phrase):
    res = _resolve(platform, None, model, args)
    assert phrase in " ".join(c.message for c in res.conflicts), [c.message for c in res.conflicts]


def test_the_fixes_resolve():
    """Every fix the resolver offers for a refusal of the table resolves (SGLang's verdict on them is the
    differential's, tools/sglang_diff.py --fixes)."""
    for _case, platform, model, args, _phrase in REFUSED:
        res = resolve_request(get_engine(), platform=platform, model=dict(model), args=args)
        for conflict in res.conflicts:
            for fix in conflict.fixes:
                fixed = {k: v for k, v in args.items() if k not in fix.unset}
                fixed.update(fix.set)
                assert not _resolve(platform, None, model, fixed).conflicts, (args, fix)


def test_the_all_to_all_stretches_a_typed_ep_size_with_a_warning():
    res = _resolve("sm90", None, QWEN_MOE, {"tp_size": 4, "ep_size": 2, "moe_a2a_backend": "mooncake"})
    assert res.values["ep_size"] == 4
    (step,) = res.derivations["ep_size"].adjustments
    assert step.rule.id == "adjust.a2a.ep-size-spans-tp"
    assert any("expert parallel size is adjusted from 2" in w.message for w in res.warnings)


def test_the_table_is_sglangs_answer():
    """Ask SGLang 0.5.23 (the oracle) the whole table again: every value and every refusal."""
    from tools.sglang_diff import ask_oracle, sglang_value

    python = oracle_python()
    requests = [{"id": c[0], "platform": c[1], "model": c[3], "args": c[4],
                 **({"platform_overrides": {"gpu_memory_gb": c[2]}} if c[2] else {})} for c in CASES]
    requests += [{"id": c[0], "platform": c[1], "model": c[2], "args": c[3]} for c in REFUSED]
    answers = {rid: a["sglang"] for rid, a in ask_oracle(requests, python, ORACLE).items()}
    defaults = {dest: a.default for dest, a in catalogue().by_dest.items()}
    for case, _platform, _memory, _model, args, expected in CASES:
        got = {f: sglang_value(answers[case], {"args": args}, f, defaults) for f in FIELDS}
        assert answers[case]["status"] == "resolved" and got == {**BASE, **expected}, (case, got)
    for case, _platform, _model, _args, phrase in REFUSED:
        assert answers[case]["status"] == "error" and phrase in answers[case]["message"], (case, answers[case])
