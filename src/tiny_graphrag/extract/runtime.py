"""How GLiNER and GLiREL run: device, precision, dynamic int8, or encoders on ONNX Runtime.

Chosen from the ExtractionConfig once (`runtime_for`), applied to each model as it loads
(`optimized`); the choice is part of the per-process model cache's key.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, require
from ..models import choose_device

if TYPE_CHECKING:  # pragma: no cover
    from ..config import ExtractionConfig


@dataclass(frozen=True)
class Runtime:
    device: str
    half: bool
    quantize: str | None = None  # "int8": dynamic int8 linear layers (CPU only)
    onnx: bool = False  # encoders run by ONNX Runtime (CPU only; extract/onnx_encoder.py)

    @property
    def dtype(self) -> str:
        if self.quantize:
            return f"{self.quantize}-dynamic"
        return "float16" if self.half else "float32"


def runtime_for(config: "ExtractionConfig") -> Runtime:
    """Device from the config (else CUDA -> MPS -> CPU); fp16 only on CUDA and when asked."""
    device = choose_device(config.device)
    quantize, onnx = config.quantize, config.runtime == "onnx"
    if (quantize or onnx) and device != "cpu":
        what = f"quantize='{quantize}'" if quantize else "runtime='onnx'"
        raise ConfigError(f"extraction {what} runs on the CPU only, but the device is {device}. "
                          "To fix: pass --device cpu, or drop it (on a GPU use half precision).")
    if onnx:  # the install hint now, not a load error later
        require("onnxruntime", "onnx", "Extraction with ONNX Runtime (--runtime onnx)")
        require("onnx", "onnx", "Extraction with ONNX Runtime (--runtime onnx)")
    return Runtime(device=device, half=bool(config.half_precision) and device.startswith("cuda"), quantize=quantize,
                   onnx=onnx)


def optimized(model: Any, rt: Runtime, name: str) -> Any:
    """The model with its encoders on ONNX Runtime, or its linear layers (nearly all the FLOPs)
    as dynamic int8, when `rt` asks. int8 moves scores (agreement with fp32 in
    bench/RESULTS.md): opt-in."""
    if rt.onnx:
        from .onnx_encoder import with_onnx_encoders

        return with_onnx_encoders(model, name)
    if not rt.quantize:
        return model
    import torch
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():  # torch deprecates these tensor types in favour of torchao
        warnings.simplefilter("ignore", UserWarning)
        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
