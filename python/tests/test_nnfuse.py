"""The Python module on the bundled models: compile, run, report, verify, save, threads, errors.

Run with the module built (scripts/build.sh puts it in build/python):
    PYTHONPATH=build/python /usr/bin/python3 -m pytest -q python/tests
"""
import json
import os
import threading

import numpy as np
import pytest

import nnfuse

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models")
RESNET = os.path.join(MODELS, "tiny_resnet.onnx")


def rel_error(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.fixture(scope="module")
def resnet():
    return nnfuse.compile(RESNET, threads=2)


def test_run_matches_pytorch(resnet):
    x = np.load(os.path.join(MODELS, "tiny_resnet_input.npy"))
    want = np.load(os.path.join(MODELS, "tiny_resnet_logits.npy"))
    out = resnet.run({"input": x})
    assert list(out) == ["logits"]
    assert isinstance(out["logits"], np.ndarray)
    assert out["logits"].dtype == np.float32 and out["logits"].shape == want.shape
    assert rel_error(out["logits"], want) <= 1e-4


def test_describes_the_model(resnet):
    assert resnet.inputs == {"input": ("float32", (1, 3, 32, 32))}
    assert resnet.outputs == {"logits": ("float32", (1, 10))}
    assert resnet.num_imported_nodes == 22
    assert resnet.num_nodes < resnet.num_imported_nodes


def test_report_says_what_fused(resnet):
    report = resnet.report
    assert isinstance(report, dict)
    assert "ConvBatchnormFusionPass" in str(report)


def test_verify_and_save(resnet, tmp_path):
    v = resnet.verify(rtol=1e-4)
    assert v["pass"] and v["rtol"] == 1e-4
    assert v["outputs"][0]["name"] == "logits"
    assert v["outputs"][0]["relative_error"] <= 1e-4
    path = tmp_path / "fused.onnx"
    resnet.save(path)
    again = nnfuse.compile(path, fusion=False)
    assert again.num_nodes == resnet.num_nodes
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    assert rel_error(again.run({"input": x})["logits"], resnet.run({"input": x})["logits"]) <= 1e-6


def test_non_contiguous_and_contiguous_inputs_agree(resnet):
    x = np.random.default_rng(1).standard_normal((1, 32, 32, 3)).astype(np.float32)
    view = x.transpose(0, 3, 1, 2)  # not C-contiguous: copied first
    assert not view.flags["C_CONTIGUOUS"]
    a = resnet.run({"input": view})["logits"]
    b = resnet.run({"input": np.ascontiguousarray(view)})["logits"]
    assert np.array_equal(a, b)


def test_threads_run_one_model_at_once(resnet):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(4)]
    want = [resnet.run({"input": x})["logits"] for x in xs]
    bad = []

    def work(t):
        for r in range(5):
            k = (t + r) % len(xs)
            if not np.array_equal(resnet.run({"input": xs[k]})["logits"], want[k]):
                bad.append((t, r))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert bad == []


def test_shapes_specialize_the_model():
    m = nnfuse.compile(RESNET, shapes={"input": (2, 3, 32, 32)})
    assert m.inputs["input"] == ("float32", (2, 3, 32, 32))
    out = m.run({"input": np.zeros((2, 3, 32, 32), np.float32)})
    assert out["logits"].shape == (2, 10)


def test_errors_carry_their_kind(resnet, tmp_path):
    with pytest.raises(nnfuse.Error) as e:
        resnet.run({})
    assert e.value.kind == "invalid_input" and "input" in str(e.value)
    with pytest.raises(nnfuse.Error) as e:
        resnet.run({"input": np.zeros((1, 3, 31, 32), np.float32)})
    assert e.value.kind == "invalid_input"
    with pytest.raises(nnfuse.Error) as e:
        nnfuse.compile(tmp_path / "missing.onnx")
    assert e.value.kind == "invalid_model"
    switches = tmp_path / "switches.txt"
    switches.write_text("NoSuchPass:off\n")
    with pytest.raises(nnfuse.Error) as e:
        nnfuse.compile(RESNET, fusion_switch_file=switches)
    assert "switches.txt" in str(e.value)


def test_profile_writes_a_trace(resnet, tmp_path):
    trace = tmp_path / "trace.json"
    p = resnet.profile(trace, runs=2)
    assert p["runs"] == 2 and p["run_ms"] > 0
    assert any(k["op"] == "FusedConv" for k in p["kernels"])
    events = json.loads(trace.read_text())["traceEvents"]
    assert len(events) == 2 * len(p["kernels"])


def test_save_for_onnx_runtime(resnet, tmp_path):
    import onnx
    path = tmp_path / "m.ort.onnx"
    resnet.save(path, format="ort")
    m = onnx.load(str(path))
    onnx.checker.check_model(m)
    domains = {n.domain for n in m.graph.node}
    assert "com.microsoft" in domains and "ai.nnfuse" not in domains
    with pytest.raises(nnfuse.Error, match="format"):
        resnet.save(tmp_path / "x.onnx", format="tflite")
