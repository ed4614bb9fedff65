"""`edgecc ops` (toolchain/support.py): the support matrix comes from the registries, not a hand-kept
list, and README.md's "Ops" section shows the current output.

After adding an op, a converter or a kernel variant, refresh README.md with:

    /work/venv/bin/python tests/unit/test_support.py --update
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from toolchain.support import frontend_rows, kernel_table, render

BLOCK = re.compile(r"(<!-- edgecc ops -->\n```text\n)(.*?)(```\n)", re.DOTALL)


def test_every_converter_and_registered_op_is_listed():
    from toolchain.frontend.onnx import CONVERTERS as ONNX
    from toolchain.frontend.tflite import CONVERTERS as TFLITE
    from toolchain.ops.registry import REGISTRY

    text = render()
    for name in [*ONNX, *TFLITE]:
        assert re.search(rf"^{re.escape(name)}\s", text, re.MULTILINE), name
    groups, rows = kernel_table()
    assert {op for op, _ in rows} == {k.value for k in REGISTRY}
    assert any("mps2-an386" in g for g in groups) and any("host" in g for g in groups)


def test_converter_signatures_are_the_attributes():
    from toolchain.frontend.tflite import CONVERTERS as TFLITE

    rows = {op: (ins, attrs) for op, ins, attrs in frontend_rows(TFLITE)}
    assert rows["RESIZE_BILINEAR"] == ("input, size", "align_corners=False half_pixel_centers=False")
    assert rows["CONCATENATION"][0] == "inputs..."


def test_the_readme_shows_the_current_output():
    readme = (ROOT / "README.md").read_text()
    m = BLOCK.search(readme)
    assert m, "README.md has no <!-- edgecc ops --> block"
    assert m.group(2) == render(), ("README.md's Ops section is stale: run "
                                    "`.venv/bin/python tests/unit/test_support.py --update`")


def test_the_cli_prints_it(capsys):
    from toolchain.cli import main

    assert main(["ops"]) == 0
    assert capsys.readouterr().out == render()


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    path = ROOT / "README.md"
    path.write_text(BLOCK.sub(lambda m: m.group(1) + render() + m.group(3), path.read_text()))
    print(f"updated {path}")
