"""The pipeline YAML at the door (toolchain.yaml_safe, toolchain.config): what a fuzz campaign fed
it (a Latin-1 file, 3,000 levels of nesting, a 410-byte alias bomb, duplicate keys, a newline in
weights_section, `.inf` / `.nan` preprocess values) must be one short InputError line naming the
file, fast, never a traceback or a 254 MB message."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from toolchain.config import load_config
from toolchain.errors import InputError
from toolchain.yaml_safe import MAX_BYTES, MAX_DEPTH, read_yaml


def _bomb(levels: int) -> str:
    """A "billion laughs": each level an anchored list of nine aliases of the level before."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _refused(tmp_path: Path, text: str | bytes, *needles: str, name: str = "p.yaml", seconds: float = 3.0) -> str:
    """load_config of a YAML holding `text` raises one short InputError line naming the file
    and every needle, within `seconds` (generous: the suite may share the CPU); returns the message."""
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    t0 = time.monotonic()
    with pytest.raises(InputError) as e:
        load_config(p, {})
    elapsed = time.monotonic() - t0
    msg = str(e.value)
    assert elapsed < seconds, f"took {elapsed:.2f} s"
    # <= 300 characters with `edgecc: error: ` and a path of up to 30 characters (pytest's are longer)
    assert "\n" not in msg and len(msg.replace(str(p), "p.yaml")) <= 300 - 15 - 30, msg[:400]
    assert msg.startswith(str(p)), msg
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"
    return msg


@pytest.mark.parametrize("levels", [4, 5, 9])
def test_alias_bombs_are_refused_fast_in_one_short_line(tmp_path, levels):
    text = _bomb(levels)
    assert len(text) < 500  # the campaign's bomb is 410 bytes
    _refused(tmp_path, "model: m.onnx\n" + text, "alias", "expand", seconds=1.0)  # was 15 s and 800 MB


def test_three_levels_of_nine_aliases_are_within_the_budget(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text(_bomb(3))  # 9 * 10 + 9 * 91 = 909 values from aliases: under 1000
    assert len(read_yaml(p)["l2"]) == 9


def test_small_aliases_and_merge_keys_still_work(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("model: m.onnx\npreprocess:\n  mean: &m [0.5, 0.25, 0.125]\n  std: *m\n")
    cfg = load_config(p, {})
    assert cfg.preprocess.mean == cfg.preprocess.std == (0.5, 0.25, 0.125)
    q = tmp_path / "q.yaml"
    q.write_text("a: &base {x: 1, y: 2}\nb:\n  <<: *base\n  x: 3\n")
    assert read_yaml(q) == {"a": {"x": 1, "y": 2}, "b": {"x": 3, "y": 2}}


def test_an_alias_cycle_is_refused(tmp_path):
    _refused(tmp_path, "model: m.onnx\ninput_shapes: &a {x: *a}\n", "cycle")


@pytest.mark.parametrize("text", [
    "model: m.onnx\ninput_shapes: " + "[" * 5000 + "]" * 5000 + "\n",
    "model: m.onnx\npreprocess: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
    "model: m.onnx\n" + "".join("  " * i + f"k{i}:\n" for i in range(200)),
])
def test_deep_nesting_is_refused_before_recursion_blows(tmp_path, text):
    _refused(tmp_path, text, f"more than {MAX_DEPTH} levels")


def test_nesting_up_to_the_limit_parses(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n")
    assert isinstance(read_yaml(p)["x"], list)


@pytest.mark.parametrize("text, lines", [
    ("model: a.onnx\nboard: host\nmodel: b.onnx\n", "lines 1 and 3"),
    ("model: m.onnx\npreprocess:\n  mean: 0.5\n  scale: 2\n  mean: 0.25\n", "lines 3 and 5"),
    ("model: m.onnx\ninput_shapes: {x: [1, 2], x: [1, 3]}\n", "lines 2 and 2"),
    ("model: m.onnx\nprofile: true\nyes: 1\ntrue: 2\n", "lines 3 and 4"),  # both are the key True
])
def test_duplicate_keys_name_both_lines(tmp_path, text, lines):
    _refused(tmp_path, text, "duplicate key", lines)


def test_latin1_yaml_names_the_byte_offset(tmp_path):
    text = "model: m.onnx\n# caf\xe9\n".encode("latin-1")
    _refused(tmp_path, text, "not UTF-8", f"byte {text.index(0xE9)}", "0xe9")


def test_an_oversized_yaml_is_refused_unread(tmp_path):
    _refused(tmp_path, "model: m.onnx\n" + "# padding\n" * (MAX_BYTES // 10 + 1), "more than", str(MAX_BYTES))


def test_too_many_values_are_refused_fast(tmp_path):
    _refused(tmp_path, "model: m.onnx\ninput_shapes: {x: [" + "1," * 200_000 + "1]}\n", "more than", "values")


@pytest.mark.parametrize("kind", ["fifo", "dev_null", "folder"])
def test_a_non_regular_config_file_is_refused_without_blocking(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "p.yaml"
        os.mkfifo(path)  # reading it would block forever: no writer
    else:
        path = Path("/dev/null") if kind == "dev_null" else tmp_path
    with pytest.raises(InputError, match="not a regular file"):
        load_config(path, {})


@pytest.mark.parametrize("line, needles", [
    ('weights_section: ".weights\\n"', ("weights_section", "\\n")),
    ('weights_section: ".weights\\n.data"', ("weights_section",)),
    ("preprocess: {mean: .inf}", ("mean", "finite")),
    ("preprocess: {mean: .nan}", ("mean", "finite")),
    ("preprocess: {mean: [0.5, -.inf]}", ("mean",)),
    ("preprocess: {mean: []}", ("mean",)),
    ("preprocess: {mean: [a, b]}", ("mean",)),
    ("preprocess: {mean: true}", ("mean",)),
    ("preprocess: {std: 0}", ("std", "positive")),
    ("preprocess: {std: -1}", ("std", "positive")),
    ("preprocess: {std: .nan}", ("std",)),
    ("preprocess: {scale: .inf}", ("scale",)),
    ("preprocess: {resize: [8, 1000000000]}", ("resize",)),
    ("preprocess: {channel_order: 7}", ("channel_order",)),
    ("preprocess: {layout: [NHWC]}", ("layout",)),
    ("preprocess: [1, 2]", ("preprocess",)),
    ("preprocess: {1: 2}", ("preprocess", "unknown")),
    ("input_shapes: {x: [1, 100000000000]}", ("input_shapes",)),
    ("input_shapes: {x: []}", ("input_shapes",)),
    ("input_shapes: {1: [1, 2]}", ("input_shapes",)),
    ("input_shapes: [1, 2]", ("input_shapes",)),
    ("input_shapes: {x: [1, -2]}", ("input_shapes",)),
    ('input_shapes: {"x\\ny": [1, 2]}', ("input_shapes",)),
    ('calibration: "a\\0b.npy"', ("calibration", "NUL")),
    ('board: "host\\e[2J"', ("board", "\\x1b")),
    ("1: x", ("unknown key",)),
    ("null: x", ("unknown key",)),
])
def test_bad_values_are_one_line_errors(tmp_path, line, needles):
    _refused(tmp_path, f"model: m.onnx\n{line}\n", *needles)


def test_a_huge_value_is_shown_clipped(tmp_path):
    msg = _refused(tmp_path, f"model: m.onnx\nboard: [{', '.join(['x' * 50] * 1000)}]\n", "board", "...")
    assert msg.count("x") < 120


def test_a_huge_integer_is_one_line(tmp_path):
    _refused(tmp_path, "model: m.onnx\nrepeats: " + "9" * 6000 + "\n", "value")


def test_a_top_level_that_is_not_a_mapping(tmp_path):
    _refused(tmp_path, "- model: m.onnx\n", "mapping")


def test_good_preprocess_values_keep_their_meaning(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("model: m.onnx\npreprocess: {mean: [0.5, 1, 2], std: 0.25, channel_order: bgr, layout: nchw, "
                 "resize: [8, 8]}\ninput_shapes: {x: [1, 3, 8, 8]}\n")
    pre = load_config(p, {}).preprocess
    assert pre.mean == (0.5, 1.0, 2.0) and pre.std == (0.25,) and pre.channel_order == "BGR"
    assert pre.layout == "NCHW" and pre.resize == (8, 8)


@pytest.mark.parametrize("text, needles", [
    (b"model: m.onnx\nboard: ho\x01st\n", ("line 2", "U+0001")),
    (b"model: m.onnx\x00\n", ("line 1", "U+0000")),
    (b"model: m.onnx\n---\nboard: host\n", ("another document",)),
    ("model: m.onnx\n".encode("utf-16"), ("not UTF-8", "byte 0")),
    (b"model: m.onnx\nboard: !!binary aG9zdA==\n", ("board", "string")),
    (b"model: m.onnx\nrepeats: !!python/object/apply:os.getpid []\n", ("python/object",)),
])
def test_unreadable_yaml_is_one_line(tmp_path, text, needles):
    _refused(tmp_path, text, *needles)
