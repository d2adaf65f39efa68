"""How GLiNER and GLiREL run: device, precision, dynamic int8, or encoders on ONNX Runtime.

Chosen from the ExtractionConfig once (`runtime_for`), applied to each model as it loads (`optimized`); the choice is
part of the per-process model cache's key.

ONNX Runtime (CPU): nearly all of an extraction's FLOPs are in the Hugging Face encoder each model wraps (DeBERTa-v3 for
the default models). Rather than exporting each model whole (GLiREL has no exporter), every such encoder is exported
alone (input ids and attention mask in, last hidden state out) and replaced by a module that runs the graph; the rest of
each model, tokenization and decoding included, stays the library's own code. Same weights, so predictions agree with
PyTorch's to float rounding (tests/test_extract_onnx.py; speed in bench/RESULTS.md). Each export goes to a temporary
folder, removed once ONNX Runtime has read it (and at exit): nothing is written beside the user's model files."""

from __future__ import annotations

import atexit
import functools
import logging
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiny_graphrag.backends.files import choose_device
from tiny_graphrag.errors import ConfigError, require

if TYPE_CHECKING:  # pragma: no cover
    from tiny_graphrag.config import ExtractionConfig

log = logging.getLogger(__name__)

_ONNX_FEATURE = "Extraction with ONNX Runtime (--runtime onnx)"


@dataclass(frozen=True)
class Runtime:
    device: str
    half: bool
    quantize: str | None = None  # "int8": dynamic int8 linear layers (CPU only)
    onnx: bool = False  # encoders run by ONNX Runtime (CPU only)

    @property
    def dtype(self) -> str:
        if self.quantize:
            return f"{self.quantize}-dynamic"
        return "float16" if self.half else "float32"


def runtime_for(config: ExtractionConfig) -> Runtime:
    """Device from the config (else CUDA -> MPS -> CPU); fp16 only on CUDA and when asked."""
    device = choose_device(config.device)
    quantize, onnx = config.quantize, config.runtime == "onnx"
    if (quantize or onnx) and device != "cpu":
        what = f"quantize='{quantize}'" if quantize else "runtime='onnx'"
        raise ConfigError(
            f"extraction {what} runs on the CPU only, but the device is {device}. "
            "To fix: pass --device cpu, or drop it (on a GPU use half precision)."
        )
    if onnx:  # the install hint now, not a load error later
        require("onnxruntime", "onnx", _ONNX_FEATURE)
        require("onnx", "onnx", _ONNX_FEATURE)
    return Runtime(
        device=device, half=bool(config.half_precision) and device.startswith("cuda"), quantize=quantize, onnx=onnx
    )


def optimized(model: Any, rt: Runtime, name: str) -> Any:
    """The loaded model in eval mode, as `rt` asks: in half precision, with its encoders on ONNX
    Runtime, or with its linear layers (nearly all the FLOPs) as dynamic int8. int8 moves scores
    (agreement with fp32 in bench/RESULTS.md): opt-in."""
    if rt.half:
        model.half()
    if rt.onnx:
        model = with_onnx_encoders(model, name)
    elif rt.quantize:
        import torch
        from torch.ao.quantization import quantize_dynamic

        with warnings.catch_warnings():  # torch deprecates these tensor types in favour of torchao
            warnings.simplefilter("ignore", UserWarning)
            model = quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
    return model.eval()


@functools.cache
def _work_dir() -> Path:
    """This process's export folder, removed at exit."""
    path = Path(tempfile.mkdtemp(prefix="tiny-graphrag-onnx-"))
    atexit.register(shutil.rmtree, path, True)
    return path


def _export(encoder: Any, path: Path) -> None:
    import torch

    class LastHidden(torch.nn.Module):  # the one output the models read (their `output[0]`)
        def __init__(self, inner: Any):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, return_dict=True).last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.long)
    with torch.no_grad(), warnings.catch_warnings():  # the tracer's notes on shapes it treats as constants
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHidden(encoder.eval()),
            (ids, torch.ones_like(ids)),
            str(path),
            opset_version=17,
            dynamo=False,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "sequence"} for n in ("input_ids", "attention_mask", "last_hidden_state")},
        )


def _onnx_module(encoder: Any, path: Path) -> Any:
    """A torch module with the encoder's call signature whose forward runs the exported graph."""
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    ort = require("onnxruntime", "onnx", _ONNX_FEATURE)
    config = encoder.config  # only the config: the torch weights are freed once replaced

    class OnnxEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = config
            self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            # GLiREL finds its device (and GLiNER its dtype) from the encoder's first parameter.
            self.anchor = torch.nn.Parameter(torch.zeros(1), requires_grad=False)

        def forward(self, input_ids: Any = None, attention_mask: Any = None, **_: Any) -> Any:
            if attention_mask is None:
                attention_mask = torch.ones_like(input_ids)
            feeds = {"input_ids": input_ids.cpu().long().numpy(), "attention_mask": attention_mask.cpu().long().numpy()}
            (hidden,) = self.session.run(["last_hidden_state"], feeds)
            # transformers annotates FloatTensor, a legacy alias that no torch op returns
            return BaseModelOutput(last_hidden_state=torch.from_numpy(hidden))  # type: ignore[arg-type]

    return OnnxEncoder()


def with_onnx_encoders(model: Any, name: str) -> Any:
    """`model` with every Hugging Face encoder inside it run by ONNX Runtime (in place)."""
    from transformers import PreTrainedModel

    found: list[tuple[Any, str, Any]] = []
    inside: set[int] = set()
    for parent in list(model.modules()):
        for attr, child in parent.named_children():
            if isinstance(child, PreTrainedModel) and id(child) not in inside:  # outermost encoders only
                found.append((parent, attr, child))
                inside.update(id(m) for m in child.modules())
    if not found:
        raise TypeError(f"{type(model).__name__} holds no Hugging Face encoder to run with ONNX Runtime")
    for i, (parent, attr, child) in enumerate(found):
        path = Path(tempfile.mkdtemp(prefix=f"{name}-{i}-", dir=_work_dir())) / "encoder.onnx"
        t0 = time.perf_counter()
        _export(child, path)
        setattr(parent, attr, _onnx_module(child, path))
        shutil.rmtree(path.parent, ignore_errors=True)  # the session holds the graph: free the disk (GBs)
        log.info("%s: %s exported to ONNX in %.1fs", name, type(child).__name__, time.perf_counter() - t0)
    return model
