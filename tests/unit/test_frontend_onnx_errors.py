"""ONNX frontend, loud errors: every unsupported op listed at once, an unknown attribute names its node,
a missing file and an old opset the version converter cannot upgrade are input errors."""
import pytest
from _onnx_frontend import node, rnd

from graph_builder import load, onnx_model, save
from toolchain.errors import InputError, UnsupportedModel
from toolchain.frontend.onnx import load_onnx


# ---- errors ---------------------------------------------------------------------------------
def test_unsupported_ops_are_all_listed_at_once(tmp_path):
    nodes = [node("Exp", ["x"], ["a"], name="exp_1"), node("Relu", ["a"], ["b"], name="relu_fine_9"),
             node("Pow", ["b", "b"], ["c"], name="pow_2"), node("Erf", ["c"], ["y"], name="erf_3")]
    model = onnx_model(nodes, {"x": (1, 4)}, ["y"])
    with pytest.raises(UnsupportedModel) as e:
        load(model, tmp_path)
    msg = str(e.value)
    for name, op in (("exp_1", "Exp"), ("pow_2", "Pow"), ("erf_3", "Erf")):
        assert name in msg and op in msg
    assert "relu_fine_9" not in msg  # only the unsupported nodes are listed


def test_unknown_attribute_names_the_node(tmp_path):
    nodes = [node("Relu", ["x"], ["r"], name="fine"),
             node("Conv", ["r", "W"], name="my_conv_7", pads=[0, 0, 0, 0], fancy_mode=3)]
    model = onnx_model(nodes, {"x": (1, 2, 3, 3)}, ["y"], {"W": rnd(2, 2, 1, 1)})
    with pytest.raises(UnsupportedModel) as e:
        load(model, tmp_path)
    assert "my_conv_7" in str(e.value) and "fancy_mode" in str(e.value)


def test_unsupported_is_an_input_error(tmp_path):
    assert issubclass(UnsupportedModel, InputError)
    with pytest.raises(InputError, match="no such model file"):
        load_onnx(tmp_path / "missing.onnx")


def test_old_opset_is_upgraded_or_rejected_in_one_line(tmp_path):
    g = load_onnx(save(onnx_model([node("Relu", ["x"])], {"x": (1, 4)}, ["y"], opset=9), tmp_path))
    assert [n.op.value for n in g.nodes] == ["Clamp"]  # onnx.version_converter took opset 9 to 13
    bad = save(onnx_model([node("Upsample", ["x"])], {"x": (1, 4)}, ["y"], opset=9), tmp_path)  # no scales input
    with pytest.raises(InputError, match=r"Upsample.*1 inputs \(Upsample-9 takes 2") as e:  # the door's schema check
        load_onnx(bad)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
