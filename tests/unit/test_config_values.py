"""Strict YAML / flag values in toolchain.config (review finding 6) and the --max-regression budget
syntax of `edgecc compare` (finding 8): wrong types were coerced silently (`profile: "false"` became
True, `repeats: 2.7` became 2, `min_top1_agreement: 97` a gate no run can pass)."""
from __future__ import annotations

import pytest

from profiler.compare import CompareError, compare, parse_budget
from toolchain.config import load_config
from toolchain.errors import InputError


def _yaml(tmp_path, line: str, model: str = "m.onnx"):
    p = tmp_path / "p.yaml"
    p.write_text(f"model: {model}\n{line}\n")
    return p


@pytest.mark.parametrize("line, expected", [
    ('profile: "false"', "true or false"),
    ("profile: 1", "true or false"),
    ("debug_guards: yes please", "true or false"),
    ("repeats: 2.7", "an integer between 1 and 1000"),
    ("repeats: true", "an integer between 1 and 1000"),
    ('repeats: "3"', "an integer between 1 and 1000"),
    ("warmup: -1", "an integer between 0 and 1000"),
    ("batch: 1.9", "an integer between 1 and 4096"),
    ("min_top1_agreement: 97", "a fraction between 0 and 1"),
    ("min_top1_agreement: true", "a fraction between 0 and 1"),
    ("min_sqnr_db: .nan", "a finite number"),
    ("min_sqnr_db: .inf", "a finite number"),
    ('min_sqnr_db: "20"', "a finite number"),
    ("board: 7", "a non-empty string"),
    ('weights_section: ".w\\")))) int x; //"', "a linker section name"),
    ("weights_section: .my weights", "a linker section name"),
    ("input_shapes: {x: [1, 2.5]}", "lists of positive integers"),
    ("weights_section: .bss.ecc_arena", "not a RAM section"),
    ("weights_section: .data", "not a RAM section"),
    ("preprocess: {resize: [0, 8]}", "positive integers"),
    ("preprocess: {resize: [8.7, 8]}", "positive integers"),
    ("preprocess: {scale: true}", "finite non-zero number"),
])
def test_wrong_yaml_values_are_one_line_errors(tmp_path, line, expected):
    key, _, value = line.partition(": ")
    with pytest.raises(InputError) as e:
        load_config(_yaml(tmp_path, line), {})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(tmp_path / "p.yaml")) and key in msg and expected in msg, msg


def test_right_yaml_values_keep_their_meaning(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("model: m.onnx\nprofile: false\nrepeats: 3\nwarmup: 0\nbatch: 8\nmin_top1_agreement: 1\n"
                 "min_sqnr_db: -3\nweights_section: .rodata.w$1\ninput_shapes: {x: [1, 16]}\ndebug_guards: true\n")
    cfg = load_config(p, {})
    assert cfg.profile is False and cfg.repeats == 3 and cfg.warmup == 0 and cfg.batch == 8
    assert cfg.min_top1_agreement == 1.0 and isinstance(cfg.min_top1_agreement, float)
    assert cfg.min_sqnr_db == -3.0 and cfg.weights_section == ".rodata.w$1"
    assert cfg.input_shapes == {"x": (1, 16)} and cfg.debug_guards is True


@pytest.mark.parametrize("key, value, flag", [("repeats", 0, "--repeat"), ("warmup", 5000, "--warmup"),
                                              ("kernels", "fast", "--kernels")])
def test_a_bad_flag_value_blames_the_flag(tmp_path, key, value, flag):
    p = _yaml(tmp_path, "repeats: 3")
    with pytest.raises(InputError) as e:
        load_config(p, {key: value})
    assert flag in str(e.value) and repr(value) in str(e.value) and "p.yaml" not in str(e.value)


def test_rounding_onnx_is_refused_for_a_tflite_model(tmp_path):
    with pytest.raises(InputError, match="rounding: onnx applies to ONNX models; a .tflite follows TFLite's"):
        load_config(_yaml(tmp_path, "rounding: onnx", model="m.tflite"), {})
    assert load_config(_yaml(tmp_path, "rounding: tflm", model="m.tflite"), {}).rounding == "tflm"
    assert load_config(_yaml(tmp_path, "rounding: onnx"), {}).rounding == "onnx"


@pytest.mark.parametrize("text", ["5", "cost=5", "1", "arena=0,flash=2"])
def test_a_budget_without_percent_sign_of_one_or_more_is_ambiguous(text):
    with pytest.raises(CompareError, match="ambiguous.*%"):
        parse_budget(text)


def test_budget_fractions_and_percentages():
    assert parse_budget("0.5") == {"cost": 0.5, "arena": 0.5, "flash": 0.5}
    assert parse_budget("cost=500%,arena=0") == {"cost": 5.0, "arena": 0.0, "flash": 0.05}


def test_a_budget_key_given_twice_is_an_error():
    with pytest.raises(CompareError, match="cost is given twice"):
        parse_budget("cost=5%,arena=1%,cost=1%")


def _report(board: str, unit: str, total: float) -> dict:
    return {"board": board, "cost_unit": unit, "total_cost": total, "arena_bytes": 100, "flash_bytes": 1000,
            "ops": []}


def test_forced_comparison_across_units_names_each_sides_unit():
    c = compare(_report("host", "us", 31.328), _report("mps2-an386", "instructions", 109247.0),
                parse_budget("5%"), force=True)
    assert c.failures == ["total cost 31.328 us -> 109,247 instructions (+348620.0%) exceeds the 5.0% budget"]
    c = compare(_report("a", "instructions", 100.0), _report("a", "instructions", 200.0), parse_budget("5%"))
    assert c.failures == ["total cost 100 -> 200 instructions (+100.0%) exceeds the 5.0% budget"]
