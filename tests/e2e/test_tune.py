"""Issue 16 item 6: `edgecc tune` on the MLPerf Tiny DS-CNN keyword spotter (int8 .tflite, its own
quantization) for mps2-an386 (QEMU): 7 rounds (one firmware per candidate set; ~50 s), 5 layer
signatures (the four depthwise and the four 1x1 layers share one each), a cache that a second
tune reproduces byte for byte, and a tuned `edgecc run --tuning` that passes bit-exact (ours and
TFLM's) with est_cycles_total <= the static build's (round 0) and every op's kernel_source "tuned"
(but Softmax's: one kernel, no entry). Measured: the static order already picks each layer's
fastest kernel on the Cortex-M4, so the tuned build equals it (then the totals are equal). A cache entry naming the portable kernel for a layer is
obeyed (its kernel_reason says so); a winner that no longer applies falls back to the static kernel;
a bad cache is one error line naming the file. Per-layer numbers: bench/tune_kws.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e_helpers import assert_rejected, finish

BOARD = "mps2-an386"
KWS = Path(__file__).resolve().parents[1] / "models" / "kws_dscnn_int8.yaml"
DIGITS = Path(__file__).resolve().parents[2] / "examples" / "digits" / "pipeline.yaml"


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, edgecc, need_board):
    """(first tune's OUT, the cache's bytes of the first and of a second tune)."""
    need_board(BOARD)
    run_cli = edgecc
    tmp = tmp_path_factory.mktemp("tune")
    res = run_cli("tune", KWS, "--board", BOARD, "--out", tmp / "a", "--quiet")
    assert res.code == 0, res.err
    assert "tuned 5 layer signature(s) on mps2-an386" in res.out
    res2 = run_cli("tune", KWS, "--board", BOARD, "--out", tmp / "b", "--output", tmp / "second.json", "--quiet")
    assert res2.code == 0, res2.err
    return tmp / "a", (tmp / "a" / "tuning.json").read_bytes(), (tmp / "second.json").read_bytes()


def _run(edgecc, out: Path, *extra):
    res = edgecc("run", KWS, "--board", BOARD, "--out", out, "--quiet", *extra)
    job = finish(res, out)
    assert job.code == 0 and job.report["status"] == "pass", res.err
    assert job.report["verification"]["bit_exact"] is True and job.report["verification"]["tflm_bit_exact"] is True
    return job.report


def test_tune_is_reproducible_and_the_tuned_build_is_no_slower(tuned, edgecc, tmp_path):
    out, first, second = tuned
    assert first == second  # same inputs: the same cache, byte for byte
    cache = json.loads(first)
    assert cache["format"] == "edgecc-tuning/1" and len(cache["entries"]) == 5
    assert sorted(e["layers"] for e in cache["entries"].values()) == [1, 1, 1, 4, 4]
    for e in cache["entries"].values():
        assert e["board"] == BOARD and e["winner"] in e["candidates"] and len(e["candidates"]) >= 2
        best = min(c["est_cycles"] for c in e["candidates"].values())
        assert e["candidates"][e["winner"]]["est_cycles"] == best
    rounds = sorted((out / "rounds").glob("round_*.json"))
    assert len(rounds) == max(len(e["candidates"]) for e in cache["entries"].values())  # one round per candidate rank
    static = json.loads(rounds[0].read_text())
    assert all(o["kernel_source"] == "static" for o in static["ops"])
    r = _run(edgecc, tmp_path / "tuned", "--tuning", out / "tuning.json")
    assert r["est_cycles_total"] <= static["est_cycles_total"]
    if [o["kernel"] for o in r["ops"]] == [o["kernel"] for o in static["ops"]]:  # the static choices won
        assert r["est_cycles_total"] == static["est_cycles_total"]
    else:
        assert r["est_cycles_total"] < static["est_cycles_total"]
    sources = {(o["op_type"], o["kernel_source"]) for o in r["ops"]}
    assert sources == {("Conv2D", "tuned"), ("DepthwiseConv2D", "tuned"), ("AveragePool2D", "tuned"),
                       ("FullyConnected", "tuned"), ("Softmax", "static")}  # Softmax: one kernel, nothing to tune
    assert "| winner |" in (out / "tune.md").read_text()


def test_a_cached_portable_winner_is_obeyed_and_a_gone_one_falls_back(tuned, edgecc, tmp_path):
    out, first, _ = tuned
    cache = json.loads(first)
    entries = cache["entries"]
    pool = next(k for k, e in entries.items() if e["signature"].startswith("AVG_POOL2D"))
    fc = next(k for k, e in entries.items() if e["signature"].startswith("FULLY_CONNECTED"))
    entries[pool]["winner"] = "portable/ecc_avg_pool2d_s8"
    entries[fc]["winner"] = "dsp/ecc_no_such_kernel"  # a kernel removed since the tuning
    p = tmp_path / "forced.json"
    p.write_text(json.dumps(cache))
    r = _run(edgecc, tmp_path / "forced", "--tuning", p)
    ops = {o["op_type"]: o for o in r["ops"]}
    assert ops["AveragePool2D"]["kernel"] == "portable" and ops["AveragePool2D"]["kernel_source"] == "tuned"
    assert ops["AveragePool2D"]["kernel_reason"].startswith("tuned: measured faster")
    assert ops["FullyConnected"]["kernel"] == "dsp" and ops["FullyConnected"]["kernel_source"] == "static"
    assert ops["DepthwiseConv2D"]["kernel_source"] == "tuned"


def test_a_bad_cache_is_one_line_naming_the_file(edgecc, tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"format": "edgecc-tuning/1", "entries": {"k": {"board": "b"}}}')
    res = edgecc("build", DIGITS, "--board", BOARD, "--out", tmp_path / "o", "--tuning", p)
    assert_rejected(res, tmp_path / "o", "broken.json", "entries['k']")
