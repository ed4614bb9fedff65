"""toolchain.tuning (`edgecc tune`'s cache): layer signatures (names do not count, strides and -128
weights do), the candidates of a layer (static choice first), the deterministic choice (cycles, then
instructions, then static order), the fallback to the static kernel when the cache has no entry, an
entry of another board or version, or a winner that no longer applies, and byte-identical cache
files. On the MLPerf Tiny DS-CNN int8 .tflite (its own quantization) as the Cortex-M4 sees it."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from toolchain.errors import InputError
from toolchain.frontend.tflite import load_tflite
from toolchain.lower import select_kernels
from toolchain.tuning import (STATIC, TUNED, Measured, apply_cache, candidates, choose, dump_cache, entry_key,
                              layer_signature, load_cache, make_entry)

KWS = Path(__file__).resolve().parents[2] / ".." / "shared" / "models" / "mlperf_tiny" / "kws_dscnn_int8.tflite"
PREFS = ("dsp", "portable")


@pytest.fixture(scope="module")
def kws():
    if not KWS.is_file():
        pytest.skip(f"{KWS} missing")
    g = load_tflite(KWS)
    return g, select_kernels(g, PREFS)


def _node(g, op_name: str, k: int = 0):
    return [n for n in g.nodes if n.op.name == op_name][k]


def test_signature_ignores_names_and_sees_strides_and_minus128(kws):
    g, _ = kws
    dws = [n for n in g.nodes if n.op.name == "DEPTHWISE_CONV2D"]
    assert len(dws) == 4
    sig = layer_signature(dws[1], g)
    assert sig == ("DEPTHWISE_CONV2D|in=1x25x5x64:int8.pt.zp,1x3x3x64:int8.pc.zp0,64:int32.pc.zp0"
                   "|out=1x25x5x64:int8.pt.zp|attrs=DepthwiseConv2DAttrs(window=Window(kernel=(3, 3), stride=(1, 1), "
                   "dilation=(1, 1), pads=(1, 1, 1, 1), ceil_mode=False), depth_multiplier=1, act=(0.0, inf))"
                   "|layout=NHWC|rounding=tflm")
    assert len({layer_signature(n, g) for n in dws}) == 1  # DS-CNN's four depthwise layers: one entry
    # the same layer under another name (another model): the same signature
    assert layer_signature(replace(dws[1], name="other_model/dw", source="x"), g) == sig
    # another stride: another signature
    attrs = dws[1].attrs
    strided = replace(dws[1], attrs=replace(attrs, window=replace(attrs.window, stride=(2, 2))))
    assert "stride=(2, 2)" in layer_signature(strided, g)
    # weights holding -128 (the DSP kernels refuse them): another signature
    w = dws[1].inputs[1]
    data = g.t(w).data.copy()
    data.reshape(-1)[0] = -128
    g128 = replace(g, tensors={**g.tensors, w: replace(g.t(w), data=data)})
    assert layer_signature(dws[1], g128) == sig.replace("1x3x3x64:int8.pc.zp0", "1x3x3x64:int8.pc.zp0.m128")


def test_candidates_static_first_then_preference_order(kws):
    g, static = kws
    cands = candidates(g, static, PREFS)
    assert set(cands) == set(static)
    for name, cs in cands.items():
        assert cs[0] is static[name]
        assert len({c.candidate_id for c in cs}) == len(cs)  # no duplicates
        isas = [c.isa for c in cs[1:]]
        assert isas == sorted(isas, key=PREFS.index)  # dsp before portable after the static choice
    dw = _node(g, "DEPTHWISE_CONV2D", 1)
    assert [c.candidate_id for c in cands[dw.name]][0] == "dsp/" + static[dw.name].function
    assert cands[dw.name][-1].candidate_id == "portable/ecc_depthwise_conv2d_s8"


def test_choose_cycles_then_instructions_then_static_order():
    order = ["dsp/a", "dsp/b", "portable/c"]
    assert choose({"dsp/a": Measured(100.0, 90), "dsp/b": Measured(99.0, 95)}, order) == "dsp/b"
    assert choose({"dsp/a": Measured(100.0, 90), "dsp/b": Measured(100.0, 80)}, order) == "dsp/b"
    assert choose({"dsp/b": Measured(100.0, 80), "dsp/a": Measured(100.0, 80)}, order) == "dsp/a"  # tie: static order
    assert choose({"portable/c": Measured(None, 70), "dsp/a": Measured(None, 80)}, order) == "portable/c"
    with pytest.raises(ValueError):
        choose({}, order)


def test_apply_cache_tuned_and_fallbacks(kws):
    g, static = kws
    cands = candidates(g, static, PREFS)
    dw = _node(g, "DEPTHWISE_CONV2D", 1)
    portable_id = cands[dw.name][-1].candidate_id
    sig = layer_signature(dw, g)
    measured = {c.candidate_id: Measured(1000.0 if c.isa == "portable" else 2000.0, 10) for c in cands[dw.name]}
    entry = make_entry(sig, "mps2-an386", measured, [c.candidate_id for c in cands[dw.name]], 1)
    assert entry["winner"] == portable_id
    entries = {entry_key(sig, "mps2-an386"): entry}
    chosen, source = apply_cache(g, static, cands, entries, "mps2-an386")
    same = [n.name for n in g.nodes if n.name in static and layer_signature(n, g) == sig]
    assert dw.name in same
    for name in static:
        want = portable_id if name in same else static[name].candidate_id
        assert chosen[name].candidate_id == want
        assert source[name] == (TUNED if name in same else STATIC)
    # another board, another version, no entry: the static choice
    for board, version in (("mps3-an547", None), ("mps2-an386", "9.9.9")):
        kw = {"version": version} if version else {}
        chosen, source = apply_cache(g, static, cands, entries, board, **kw)
        assert chosen == dict(static) and set(source.values()) == {STATIC}
    # a winner that no longer applies (not among the node's candidates): the static choice
    gone = {k: {**e, "winner": "dsp/ecc_no_such_kernel"} for k, e in entries.items()}
    chosen, source = apply_cache(g, static, cands, gone, "mps2-an386")
    assert chosen == dict(static) and set(source.values()) == {STATIC}


def test_cache_bytes_are_deterministic_and_load_back(tmp_path):
    m = {"dsp/a": Measured(12.5, 10), "portable/b": Measured(30.0, 20)}
    e1 = {entry_key("S1", "b"): make_entry("S1", "b", m, ["dsp/a", "portable/b"], 2),
          entry_key("S0", "b"): make_entry("S0", "b", dict(reversed(m.items())), ["portable/b", "dsp/a"], 1)}
    e2 = dict(reversed(e1.items()))
    assert dump_cache(e1) == dump_cache(e2)
    assert "time" not in dump_cache(e1)
    p = tmp_path / "t.json"
    p.write_text(dump_cache(e1))
    assert load_cache(p) == json.loads(dump_cache(e1))["entries"]
    assert load_cache(p)[entry_key("S0", "b")]["winner"] == "dsp/a"


def test_bad_cache_files_name_file_and_key(tmp_path):
    p = tmp_path / "t.json"
    p.write_text("{not json")
    with pytest.raises(InputError, match=r"t\.json: not a tuning cache"):
        load_cache(p)
    entry = {"board": "b", "version": "0.1.0", "signature": "S", "candidates": {}}
    p.write_text(json.dumps({"format": "edgecc-tuning/1", "entries": {"b|0.1.0|S": entry}}))
    with pytest.raises(InputError, match=r"t\.json: entries\['b\|0\.1\.0\|S'\]: `winner` missing"):
        load_cache(p)
    with pytest.raises(InputError, match="cannot read"):
        load_cache(tmp_path / "none.json")
