"""The GLiNER and GLiREL backbones run by ONNX Runtime on the CPU (`--runtime onnx`).

Nearly all of an extraction's FLOPs are in the transformer encoder each model wraps (DeBERTa-v3
for the default models); the span and relation heads around it are small. So instead of exporting
each model whole (GLiREL has no exporter), every Hugging Face encoder inside a loaded model is
exported alone (input ids and attention mask in, last hidden state out) and replaced by a module
that runs the exported graph: the rest of each model, tokenization and decoding included, stays
the library's own code. The weights are the same floats, so predictions agree with PyTorch's to
float rounding (tests/test_extract_onnx.py; speed in bench/RESULTS.md).

Each process exports once per model load, into a temporary folder removed as soon as ONNX
Runtime has read it (and at exit): nothing is written beside the user's model files.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from ..errors import require

log = logging.getLogger(__name__)

OPSET = 17
_WORK: list[Path] = []  # this process's export folders, removed at exit


def _work_dir() -> Path:
    if not _WORK:
        _WORK.append(Path(tempfile.mkdtemp(prefix="tiny-graphrag-onnx-")))
        atexit.register(shutil.rmtree, _WORK[0], True)
    return _WORK[0]


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
            LastHidden(encoder.eval()), (ids, torch.ones_like(ids)), str(path), opset_version=OPSET, dynamo=False,
            input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                          "last_hidden_state": {0: "batch", 1: "sequence"}},
        )


def _session(path: Path, threads: int | None) -> Any:
    ort = require("onnxruntime", "onnx", "Extraction with ONNX Runtime (--runtime onnx)")
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _onnx_module(encoder: Any, path: Path, threads: int | None) -> Any:
    """A torch module with the encoder's call signature whose forward runs the exported graph."""
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    config = encoder.config  # only the config: the torch weights are freed once replaced

    class OnnxEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = config
            self.session = _session(path, threads)
            # GLiREL finds its device (and GLiNER its dtype) from the encoder's first parameter.
            self.anchor = torch.nn.Parameter(torch.zeros(1), requires_grad=False)

        def forward(self, input_ids: Any = None, attention_mask: Any = None, **_: Any) -> Any:
            if attention_mask is None:
                attention_mask = torch.ones_like(input_ids)
            feeds = {"input_ids": input_ids.cpu().long().numpy(), "attention_mask": attention_mask.cpu().long().numpy()}
            (hidden,) = self.session.run(["last_hidden_state"], feeds)
            return BaseModelOutput(last_hidden_state=torch.from_numpy(hidden))

    return OnnxEncoder()


def with_onnx_encoders(model: Any, name: str, threads: int | None = None) -> Any:
    """`model` with every Hugging Face encoder inside it run by ONNX Runtime (in place)."""
    from transformers import PreTrainedModel

    found, inside = [], set()
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
        setattr(parent, attr, _onnx_module(child, path, threads))
        shutil.rmtree(path.parent, ignore_errors=True)  # the session holds the graph: free the disk (GBs)
        log.info("%s: %s exported to ONNX in %.1fs", name, type(child).__name__, time.perf_counter() - t0)
    return model
