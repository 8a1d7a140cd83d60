"""Engine-independent models of the disaggregated-inference KV-cache workload (re-exports).

This module keeps the names it has always offered; their code lives in one module per concern:

* :mod:`fabricsim.config.catalog`: the LLM and GPU catalogs (:data:`MODELS`, :data:`GPUS`,
  :class:`ModelSpec`, :class:`GpuSpec`, :func:`get_model`, :func:`get_gpu`), data only, so the
  config layer validates ``workload.model`` and ``workload.gpu`` without importing workloads;
* :mod:`fabricsim.workloads.prompts`: prompt-length distributions (:class:`RankZipf`,
  :class:`FixedLength`) and the CSV trace reader (:func:`load_prompt_trace`);
* :mod:`fabricsim.workloads.gpu_latency`: GPU latency models (:class:`AnalyticalGpuModel`,
  :class:`TableGpuModel`, :func:`default_gpu_model` and its calibration constants), used as
  ``TTFT = prefill_s(L) + KV transfer FCT + first_decode_s(L)``;
* :mod:`fabricsim.workloads.arrivals`: Poisson request arrivals (:func:`poisson_arrivals`) and
  uniformly random prefill -> decode host pairs (:func:`random_pairs`).

New code should import from those modules.
"""

from __future__ import annotations

from fabricsim.config.catalog import GPUS, MODELS, GpuSpec, ModelSpec, get_gpu, get_model
from fabricsim.workloads.arrivals import poisson_arrivals, random_pairs
from fabricsim.workloads.gpu_latency import (
    CALIBRATION_GPU,
    DEFAULT_CALIBRATION,
    DEFAULT_DECODE_EFFICIENCY,
    DEFAULT_PREFILL_EFFICIENCY,
    AnalyticalGpuModel,
    GpuLatencyModel,
    TableGpuModel,
    default_gpu_model,
)
from fabricsim.workloads.prompts import FixedLength, RankZipf, load_prompt_trace

__all__ = [
    "CALIBRATION_GPU",
    "DEFAULT_CALIBRATION",
    "DEFAULT_DECODE_EFFICIENCY",
    "DEFAULT_PREFILL_EFFICIENCY",
    "GPUS",
    "MODELS",
    "AnalyticalGpuModel",
    "FixedLength",
    "GpuLatencyModel",
    "GpuSpec",
    "ModelSpec",
    "RankZipf",
    "TableGpuModel",
    "default_gpu_model",
    "get_gpu",
    "get_model",
    "load_prompt_trace",
    "poisson_arrivals",
    "random_pairs",
]
