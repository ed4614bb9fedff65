"""A small synthetic report (no compiler needed) shared by the tests of profiler/."""
from __future__ import annotations

from typing import Any

from profiler.parse import OpCosts
from profiler.report import build_report

NAMES = ["conv_a", "pool_b", "fc_c"]


def memory() -> dict[str, Any]:
    return {"arena_bytes": 96, "lower_bound_bytes": 96, "greedy_by_size_bytes": 112, "naive_bytes": 160,
            "planner": "first_fit_by_size", "alignment": 16, "timeline_png": "memory.png",
            "buffers": [{"name": "x", "offset": 0, "size": 32, "first_op": 0, "last_op": 0, "tensors": ["x"]},
                        {"name": "conv_a", "offset": 32, "size": 64, "first_op": 0, "last_op": 1, "tensors": ["conv_a"]},
                        {"name": "scratch:conv_a", "offset": 0, "size": 16, "first_op": 0, "last_op": 0, "tensors": []},
                        {"name": "pool_b", "offset": 0, "size": 16, "first_op": 1, "last_op": 2, "tensors": ["pool_b"]},
                        {"name": "fc_c", "offset": 16, "size": 10, "first_op": 2, "last_op": 2, "tensors": ["fc_c"]}]}


def report(costs: tuple[float, ...] | OpCosts | None = (600.0, 100.0, 300.0), board: str = "mps2-an386",
           **kw: Any) -> dict[str, Any]:
    """A report of three ops; `costs` per op (exact instructions), an OpCosts, or None (no measurement)."""
    ops = [{"index": i, "name": n, "op_type": t, "kernel": "portable", "output_shape": [1, 4], "macs": m,
            "weight_bytes": w, "act_read_bytes": 32, "act_write_bytes": 16}
           for i, (n, t, m, w) in enumerate(zip(NAMES, ["Conv2D", "MaxPool2D", "FullyConnected"], [1200, 0, 40],
                                                [72, 0, 50], strict=True))]
    numerics = {"samples": 4, "ops": {"conv_a": {"sqnr_db_isolated": 40.0, "sqnr_db_cumulative": 40.0,
                                                 "max_abs_err_lsb": 1.5, "max_abs_err_lsb_isolated": 1.5},
                                      "pool_b": {"sqnr_db_isolated": 45.0, "sqnr_db_cumulative": 38.0,
                                                 "max_abs_err_lsb": 2.0, "max_abs_err_lsb_isolated": 0.5},
                                      "fc_c": {"sqnr_db_isolated": 31.5, "sqnr_db_cumulative": 30.0,
                                               "max_abs_err_lsb": 6.0, "max_abs_err_lsb_isolated": 3.0}}}
    c = OpCosts("instructions", costs, sum(costs) + 20, True, costs, costs) if isinstance(costs, tuple) else costs
    args: dict[str, Any] = {
        "model": "models/tiny.onnx", "model_sha256": "ab" * 32, "board": board, "costs": c, "ops": ops,
        "memory": memory(), "lib_sections": {"text": 1000, "rodata": 100, "weights": 122, "data": 0, "bss": 0},
        "harness_bytes": 5000, "status": "pass", "timings": {"build_python": 0.1}, "generator": "edgecc test",
        "verification": {"reference": "int8 interpreter", "bit_exact": True, "samples": 4, "top1_agreement": 1.0,
                         "sqnr_db": 30.0, "mismatches": None},
        "numerics": numerics}
    args.update(kw)
    return build_report(**args)
