"""Out-of-sample quantization quality (issue 3 point 3): calibrate edgecc's INT8 PTQ on one half
of the images and measure top-1 agreement / SQNR against the float model on the other half.

    .venv/bin/python bench/quant_holdout.py            # host, both folds, plus in-sample
    .venv/bin/python bench/quant_holdout.py --board mps2-an386

Folds: "A" = calibrate on the first half, verify on the second (what
tests/e2e/test_quant_holdout.py asserts); "B" = the reverse. "in-sample" = calibrate and verify
on all images (the tests/models YAMLs as they are). ResNet-8: 200 CIFAR-10 images (halves of
100); VWW: 300 JPEGs sorted by name (halves of 150).
Writes bench/results/quant_holdout.json and bench/results/quant_holdout.md.
"""
from __future__ import annotations

import argparse
import os
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import MODELS, REPO, RESULTS, edgecc_run, fmt, header, row, snapshot  # noqa: E402

DATA = REPO.parent / "shared" / "data"


def split(model: str, tmp: Path) -> tuple[Path, Path]:
    """(first half, second half) as DATA paths edgecc reads."""
    a, b = tmp / "first", tmp / "second"
    if model == "ic_resnet8_float":
        images = np.load(DATA / "cifar10_calib_200.npz")["images"]
        h = len(images) // 2
        np.savez(a.with_suffix(".npz"), images=images[:h])
        np.savez(b.with_suffix(".npz"), images=images[h:])
        return a.with_suffix(".npz"), b.with_suffix(".npz")
    files = sorted(p for p in (DATA / "vww_calib").iterdir() if p.suffix.lower() == ".jpg")
    h = len(files) // 2
    for folder, part in ((a, files[:h]), (b, files[h:])):
        folder.mkdir()
        for f in part:
            (folder / f.name).symlink_to(f.resolve())
    return a, b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="host")
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--rev", help="measure commit REV from a read-only snapshot (git archive), not the work tree")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="edgecc-holdout-"))
    root = snapshot(args.rev) if args.rev else REPO
    rows = []
    for model, yaml in MODELS.items():
        (work / model).mkdir()
        first, second = split(model, work / model)
        for fold, calib, verify in (("in-sample", None, None), ("A", first, second), ("B", second, first)):
            extra = [] if calib is None else ["--calibration", str(calib), "--verify", str(verify)]
            job = edgecc_run(root / yaml.relative_to(REPO), args.board, work / f"out-{model}-{fold}", *extra,
                             root=root)
            r = row(args.board, model, job)
            r["fold"] = fold
            r["calibration"] = "all" if calib is None else calib.name
            r["verify"] = "all" if verify is None else verify.name
            print(f"{model:<20} fold {fold:<9} exit {r['exit_code']} samples {r.get('samples')} "
                  f"agree {fmt(r.get('top1_agreement'), 4)} sqnr {fmt(r.get('sqnr_db'))}", flush=True)
            rows.append(r)
    doc = {"header": header(1, load0, args.rev, root), "board": args.board, "rows": rows}
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "quant_holdout.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    h = doc["header"]
    md = ["# Out-of-sample quantization quality (edgecc INT8 PTQ vs the float ONNX model)", "",
          f"Measured {h['date_utc']} on board `{args.board}`, edgecc {h['edgecc']['version']} at "
          f"{h['edgecc']['git_commit'][:12]} ({h['edgecc']['measured']}). "
          "Re-run: `.venv/bin/python bench/quant_holdout.py`.", "",
          "Fold A calibrates on the first half of the images and verifies on the second half (the split "
          "`tests/e2e/test_quant_holdout.py` asserts); fold B is the reverse; in-sample calibrates and "
          "verifies on all images (issue 3 point 3). Agreement = top-1 of our int8 output equal to the "
          "float model's top-1; SQNR of the dequantized output vs onnxruntime's float output.", "",
          "| model | fold | calibration | verification | samples | top-1 agreement (%) | disagreeing images | "
          "SQNR (dB) | bit-exact |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        n, a = r.get("samples"), r.get("top1_agreement")
        bad = round(n * (1 - a)) if n is not None and a is not None else None
        md.append(f"| {r['model']} | {r['fold']} | {r['calibration']} | {r['verify']} | {fmt(n)} | "
                  f"{fmt(a * 100 if a is not None else None, 1)} | {fmt(bad)} | {fmt(r.get('sqnr_db'))} | "
                  f"{fmt(r.get('bit_exact'))} |")
    md += ["", "`tests/e2e/test_quant_holdout.py` asserts fold A on `host` with thresholds set from these "
           "measurements minus about two images: ResNet-8 >= 96% of 100, VWW >= 98% of 150. One image is 1 point "
           "of 100 and 0.67 of 150, so out-of-sample agreement on these halves moves by a few images between "
           "folds (compare A and B); the in-sample bars of issue 3 (97.0% / 98.3%) apply to the full sets."]
    (args.results / "quant_holdout.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    print(f"wrote {args.results / 'quant_holdout.json'} and {args.results / 'quant_holdout.md'}")
    return 0 if all(r["exit_code"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
