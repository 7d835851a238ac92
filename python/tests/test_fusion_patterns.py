"""User fusion patterns from Python: registered, fused, reported under their names, verified,
and failing clearly.

    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q python/tests
"""
import os

import numpy as np
import pytest

import nnfuse

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models")
MLP = os.path.join(MODELS, "tiny_mlp.onnx")
RESNET = os.path.join(MODELS, "tiny_resnet.onnx")


@pytest.fixture
def registered():
    """Names registered by the test, unregistered after it."""
    names = []
    yield names
    for name in names:
        nnfuse.unregister_fusion_pattern(name)


def mish(x):
    return x * np.tanh(np.log1p(np.exp(x)))


def register_mish(registered, name="Mish", compute=None, infer_shape=None):
    class Pattern:
        def infer_shape(self, input_shapes):
            return infer_shape(input_shapes) if infer_shape else [input_shapes[0]]

        def compute(self, inputs):
            return compute(inputs) if compute else [mish(inputs[0])]

    nnfuse.fusion_pattern(ops=["Softplus", "Tanh", "Mul"], name=name)(Pattern)
    registered.append(name)


def effects(model, name):
    return model.report["graph_fusion"][name]["effect_times"]


def test_mish_fuses_is_reported_and_verifies(registered):
    register_mish(registered)
    assert "Mish" in nnfuse.registered_fusion_patterns()
    m = nnfuse.compile(MLP)
    assert effects(m, "Mish") == 2
    assert sum(f["pass"] == "Mish" for f in m.report["fused_nodes"]) == 2
    assert m.verify()["pass"]
    x = np.load(os.path.join(MODELS, "tiny_mlp_input.npy"))
    want = np.load(os.path.join(MODELS, "tiny_mlp_probs.npy"))
    assert np.abs(m.run({"x": x})["probs"] - want).max() <= 1e-5


def test_class_decorator_with_context_and_params(registered):
    seen = {}

    @nnfuse.fusion_pattern(ops=["BatchNormalization", "Relu"], params={"floor": 0.0})
    class PyBnRelu:
        def infer_shape(self, input_shapes, ctx):
            seen["ops"] = ctx["ops"]
            seen["inputs"] = ctx["inputs"]
            return [input_shapes[0]]

        def compute(self, inputs, ctx):
            x, scale, bias, mean, var = inputs
            eps = ctx["attrs"][0].get("epsilon", 1e-5)
            shape = (1, -1) + (1,) * (x.ndim - 2)
            y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
            y = y * scale.reshape(shape) + bias.reshape(shape)
            return [np.maximum(y, ctx["params"]["floor"]).astype(np.float32)]

    registered.append("PyBnRelu")
    m = nnfuse.compile(RESNET)
    assert seen["ops"] == ["BatchNormalization", "Relu"]
    assert seen["inputs"] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]
    assert effects(m, "PyBnRelu") == 3
    assert m.verify()["pass"]


def test_a_contradicting_infer_shape_leaves_the_match_unfused(registered, capfd):
    register_mish(registered, "WrongMish", infer_shape=lambda s: [s[0] + (2,)])
    m = nnfuse.compile(MLP)
    entry = m.report["graph_fusion"]["WrongMish"]
    assert entry["effect_times"] == 0
    assert "infer_shape gave [64, 256, 2]" in entry["rejected"][0]["reason"]
    assert "WrongMish" in capfd.readouterr().err
    assert m.verify()["pass"]


def test_a_raising_infer_shape_leaves_the_match_unfused(registered):
    def boom(shapes):
        raise ValueError("no shapes today")

    register_mish(registered, "RaisingInfer", infer_shape=boom)
    entry = nnfuse.compile(MLP).report["graph_fusion"]["RaisingInfer"]
    assert entry["effect_times"] == 0
    assert "no shapes today" in entry["rejected"][0]["reason"]


def test_a_raising_compute_fails_the_run_naming_pattern_and_node(registered):
    def boom(inputs):
        raise ValueError("out of ideas")

    register_mish(registered, "BrokenMish", compute=boom)
    m = nnfuse.compile(MLP)
    x = np.load(os.path.join(MODELS, "tiny_mlp_input.npy"))
    with pytest.raises(nnfuse.Error) as e:
        m.run({"x": x})
    assert e.value.kind == "runtime"
    assert "fusion pattern 'BrokenMish' (node '" in str(e.value)
    assert "out of ideas" in str(e.value)


def test_registration_is_checked(registered):
    register_mish(registered)
    with pytest.raises(nnfuse.Error, match="already registered"):
        register_mish([], "Mish")
    with pytest.raises(nnfuse.Error, match="at least two ops"):
        nnfuse.fusion_pattern(ops=["Relu"], name="OneOp")(
            type("P", (), {"infer_shape": lambda s, x: x, "compute": lambda s, x: x}))
    with pytest.raises(TypeError, match="compute"):
        nnfuse.fusion_pattern(ops=["Relu", "Relu"])(type("NoCompute", (), {"infer_shape": lambda s, x: x}))
