"""nnfuse: an operator-fusion compiler and runtime for ONNX models.

    import nnfuse, numpy as np
    m = nnfuse.compile("model.onnx", fusion_switch_file=None, threads=2, shapes=None)
    outputs = m.run({"input": np.zeros((1, 3, 224, 224), np.float32)})  # dict of arrays
    m.report            # fusion_result.json as a dict: what fused, what did not and why
    m.verify(rtol=1e-4) # fused against unfused on generated inputs, per output
    m.save("model.fused.onnx")
    m.save("model.ort.onnx", format="ort")  # ONNX Runtime's contrib ops: ONNX Runtime runs it
    m.profile("trace.json") # per-kernel times, and a Chrome trace of them

User fusion patterns: a chain of ONNX ops replaced by one node your numpy code computes,
matched before the built-in fusions, reported under its name and checked by verify:

    @nnfuse.fusion_pattern(ops=["Softplus", "Tanh", "Mul"])
    class Mish:
        def infer_shape(self, input_shapes):    # tuples, None for a dim unknown at compile time
            return [input_shapes[0]]
        def compute(self, inputs):              # numpy arrays in, a list of arrays out
            x = inputs[0]
            return [x * np.tanh(np.log1p(np.exp(x)))]

Both methods may take a second argument, the match: {"pattern", "node", "ops", "attrs" (one
dict per matched node), "inputs" (per input: (matched node, its input index)), "params"}. compute runs under the GIL (it is called from the thread
running the model).

Errors are nnfuse.Error, whose .kind is one of invalid_model, unsupported, invalid_input,
invalid_argument, runtime, internal. The GIL is released while a model compiles or runs, so
several Python threads may run one model at once; C-contiguous inputs are read in place.
"""
import atexit
import inspect
import json

from ._nnfuse import Error
from . import _nnfuse

__all__ = ["compile", "Model", "Error", "fusion_pattern", "unregister_fusion_pattern",
           "registered_fusion_patterns"]


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

    def profile(self, path=None, inputs=None, runs=10):
        """Times every kernel over `runs` runs on `inputs` (generated where not given) and, with
        `path`, writes a Chrome trace there: {"runs", "run_ms", "kernels": [{"name", "op",
        "kernel", "reference_fallback", "ms"}]}."""
        return self._session.profile(dict(inputs or {}), runs, str(path or ""))

    def save(self, path, format="nnfuse"):
        """Writes the fused model as ONNX: format "nnfuse" (nnfuse's fused ops; nnfuse runs it)
        or "ort" (ONNX Runtime's contrib ops and standard ONNX ops; ONNX Runtime runs it)."""
        self._model.save(str(path), format)


def compile(path, fusion_switch_file=None, threads=2, shapes=None, fusion=True):
    """Compiles (fuses) the ONNX model at `path`; `shapes` maps input names to dims."""
    native = _nnfuse.compile(str(path), str(fusion_switch_file or ""),
                             {k: list(v) for k, v in (shapes or {}).items()}, fusion)
    return Model(native, threads)


def _with_context(fn):
    """fn(x, ctx) as it is, fn(x) given the context too (and ignoring it)."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        takes_context = len(params) >= 2 or any(
            p.kind == p.VAR_POSITIONAL for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        takes_context = True
    return fn if takes_context else (lambda x, _ctx: fn(x))


_registered = []


def fusion_pattern(ops, name=None, params=None):
    """Class (or instance) decorator registering a user fusion pattern over the chain `ops`.

    The object needs infer_shape(input_shapes[, ctx]) -> list of shapes and
    compute(inputs[, ctx]) -> list of arrays; `name` defaults to the class's name; `params`
    ({name: number}) reaches both through ctx["params"]. Registration lasts until
    unregister_fusion_pattern(name) or the interpreter exits.
    """
    def register(obj):
        instance = obj() if isinstance(obj, type) else obj
        pattern_name = name or (obj.__name__ if isinstance(obj, type) else type(obj).__name__)
        for method in ("infer_shape", "compute"):
            if not callable(getattr(instance, method, None)):
                raise TypeError(f"fusion pattern {pattern_name!r} has no {method} method")
        _nnfuse.register_fusion_pattern(pattern_name, list(ops),
                                        _with_context(instance.infer_shape),
                                        _with_context(instance.compute),
                                        {k: float(v) for k, v in (params or {}).items()})
        _registered.append(pattern_name)
        return obj
    return register


def unregister_fusion_pattern(name):
    """Removes a registered pattern; False when none has that name."""
    if name in _registered:
        _registered.remove(name)
    return _nnfuse.unregister_fusion_pattern(name)


def registered_fusion_patterns():
    return _nnfuse.registered_fusion_patterns()


@atexit.register
def _release_patterns():
    # The patterns hold Python functions: release them while the interpreter is whole.
    for pattern_name in list(_registered):
        _nnfuse.unregister_fusion_pattern(pattern_name)
    _registered.clear()
