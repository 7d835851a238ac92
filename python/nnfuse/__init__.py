"""nnfuse: an operator-fusion compiler and runtime for ONNX models.

    import nnfuse, numpy as np
    m = nnfuse.compile("model.onnx", fusion_switch_file=None, threads=2, shapes=None)
    outputs = m.run({"input": np.zeros((1, 3, 224, 224), np.float32)})  # dict of arrays
    m.report            # fusion_result.json as a dict: what fused, what did not and why
    m.verify(rtol=1e-4) # fused against unfused on generated inputs, per output
    m.save("model.fused.onnx")

Errors are nnfuse.Error, whose .kind is one of invalid_model, unsupported, invalid_input,
invalid_argument, runtime, internal. The GIL is released while a model compiles or runs, so
several Python threads may run one model at once; C-contiguous inputs are read in place.
"""
import json

from ._nnfuse import Error
from . import _nnfuse

__all__ = ["compile", "Model", "Error"]


class Model:
    """A compiled (fused) model, planned to run with `threads` threads."""

    def __init__(self, native, threads):
        self._model = native
        self._session = _nnfuse.Session(native, threads)
        self._report = None

    def run(self, inputs):
        """Runs the model on {name: numpy array} and returns {name: numpy array}."""
        return self._session.run(dict(inputs))

    @property
    def report(self):
        """The fusion report (fusion_result.json's content) as a dict."""
        if self._report is None:
            self._report = json.loads(self._model.report_json())
        return self._report

    @property
    def inputs(self):
        """{name: (dtype name, shape)}, -1 for a dim known only at run time."""
        return self._model.inputs()

    @property
    def outputs(self):
        return self._model.outputs()

    @property
    def num_nodes(self):
        return self._model.num_nodes

    @property
    def num_imported_nodes(self):
        return self._model.num_imported_nodes

    def verify(self, rtol=1e-4, seed=0):
        """Fused against unfused on seeded generated inputs: {"pass", "rtol", "outputs"}."""
        return self._model.verify(rtol, seed)

    def save(self, path):
        """Writes the fused model as ONNX (nnfuse runs it as it is)."""
        self._model.save(str(path))


def compile(path, fusion_switch_file=None, threads=2, shapes=None, fusion=True):
    """Compiles (fuses) the ONNX model at `path`; `shapes` maps input names to dims."""
    native = _nnfuse.compile(str(path), str(fusion_switch_file or ""),
                             {k: list(v) for k, v in (shapes or {}).items()}, fusion)
    return Model(native, threads)
