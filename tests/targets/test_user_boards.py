"""The user's own boards file (`--boards FILE`, YAML `boards: FILE`) and the boards with the memory
of real parts (stm32f4, stm32h7): loading, overriding, FILE:LINE errors, linker script and fit check.
No compiler or QEMU needed."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from targets import BoardError, BuildError, default_boards_path, list_targets, load_target
from targets.build import Footprint, check_fits
from targets.linker import memory_script

STOCK = yaml.safe_load(default_boards_path().read_text())["boards"]


def board_file(tmp_path: Path, boards: dict, name: str = "my_boards.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump({"boards": boards}, sort_keys=False))
    return p


def test_package_carries_boards_yaml() -> None:
    # the package's own copy (package data; in the source tree a link to the repository's file)
    assert default_boards_path().parent.name == "targets"
    assert default_boards_path().resolve().read_text() == (Path(__file__).parents[2] / "boards.yaml").read_text()


def test_user_file_adds_and_overrides_boards(tmp_path: Path) -> None:
    mine = copy.deepcopy(STOCK["mps2-an386"])
    mine["description"] = "my M4 with a 64 KB arena"
    mine["memory"]["regions"]["PSRAM"]["size"] = "64K"
    smaller = copy.deepcopy(STOCK["mps2-an386"])
    smaller["memory"]["regions"]["PSRAM"]["size"] = 1024
    f = board_file(tmp_path, {"my-m4": mine, "mps2-an386": smaller})
    t = load_target("my-m4", extra=f)
    assert (t.description, t.memory.region("PSRAM").size, t.source) == ("my M4 with a 64 KB arena", 65536, str(f))
    assert load_target("mps2-an386", extra=f).memory.region("PSRAM").size == 1024  # overridden
    assert load_target("mps2-an386").memory.region("PSRAM").size == 16 << 20        # the stock one otherwise
    names = [b.name for b in list_targets(extra=f)]
    assert names == [*STOCK, "my-m4"]  # an override stays in place, new boards come last


@pytest.mark.parametrize("text, line, needles", [
    ("boards:\n  b:\n    cpu: x\n", 2, ["board 'b'", "field 'isa_features': missing"]),
    ("boards:\n  b: 3\n", 2, ["expected a mapping of fields"]),
    ("boards:\n  a: {}\n  a: {}\n", 3, ["duplicate key 'a' (first at line 2)"]),
    ("boards: [\n", 2, ["invalid YAML"]),
    ("other: 1\n", None, ["expected a top-level 'boards:' mapping"]),
])
def test_bad_files_name_file_and_line(tmp_path: Path, text: str, line: int | None, needles: list[str]) -> None:
    p = tmp_path / "b.yaml"
    p.write_text(text)
    with pytest.raises(BoardError) as e:
        load_target("b", extra=p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:{line}: " if line else f"{p}: "), msg
    assert all(n in msg for n in needles), msg


def test_bad_field_names_its_line(tmp_path: Path) -> None:
    b = copy.deepcopy(STOCK["mps2-an386"])
    b["run"]["cost_units"] = "instructions"  # a typo: refused, not ignored
    f = board_file(tmp_path, {"x": b})
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "cost_units" in ln)
    with pytest.raises(BoardError, match=rf"^{f}:{line}: board 'x': field 'run.cost_units': unknown field; "
                                         r"allowed here: .*cost_unit"):
        load_target("x", extra=f)
    del b["run"]["cost_units"]
    b["memory"]["regions"]["RAM"]["size"] = "4X"
    f = board_file(tmp_path, {"x": b})
    line = next(i for i, ln in enumerate(f.read_text().splitlines(), 1) if "4X" in ln)
    with pytest.raises(BoardError, match=rf"^{f}:{line}: board 'x': field 'memory.regions.RAM.size': expected a "
                                         r"byte count"):
        load_target("x", extra=f)


def test_unknown_board_and_missing_file(tmp_path: Path) -> None:
    f = board_file(tmp_path, {"mine": STOCK["mps2-an386"]})
    with pytest.raises(BoardError, match=r"unknown board 'nope'; known boards: .*mine"):
        load_target("nope", extra=f)
    with pytest.raises(BoardError, match=r"no such boards file"):
        load_target("host", extra=tmp_path / "absent.yaml")


def test_cli_lists_user_boards(tmp_path: Path, edgecc) -> None:
    f = board_file(tmp_path, {"my-m4": STOCK["mps2-an386"]})
    res = edgecc("boards", "--boards", f)
    assert res.code == 0 and res.out.splitlines()[-1].startswith("my-m4 "), res.out + res.err
    bad = board_file(tmp_path, {"x": {"cpu": 1}}, "bad.yaml")
    res = edgecc("boards", "--boards", bad)
    assert res.code == 2 and res.err.startswith(f"edgecc: error: {bad}:"), res.err


def test_yaml_boards_key_is_relative_to_the_yaml(tmp_path: Path) -> None:
    from toolchain.config import load_config

    (tmp_path / "cfg").mkdir()
    cfg_file = tmp_path / "cfg" / "p.yaml"
    cfg_file.write_text("model: m.onnx\nboards: mine.yaml\n")
    assert load_config(cfg_file, {}).boards == tmp_path / "cfg" / "mine.yaml"
    assert load_config(cfg_file, {"boards": Path("x.yaml")}).boards == Path("x.yaml")  # the flag wins


def test_part_boards_have_the_parts_memory() -> None:
    f4, h7 = load_target("stm32f4"), load_target("stm32h7")
    assert {r.name: r.size for r in f4.memory.regions} == {"FLASH": 1 << 20, "SRAM": 128 << 10, "CCM": 64 << 10}
    assert {r.name: r.size for r in h7.memory.regions} == {"FLASH": 2 << 20, "ITCM": 64 << 10, "DTCM": 128 << 10,
                                                          "AXISRAM": 512 << 10}
    assert f4.run.args == ("-M", "mps2-an386") and h7.run.args == ("-M", "mps2-an500")
    assert f4.memory.arenas == ("SRAM",) and h7.memory.arenas == ("DTCM", "AXISRAM")  # the H7 spreads its arena
    script = memory_script(f4)
    assert "FLASH (rx) : ORIGIN = 0x00000000, LENGTH = 1M" in script
    assert "SRAM (rwx) : ORIGIN = 0x20000000, LENGTH = 128K" in script
    assert 'REGION_ALIAS("REGION_ARENA", SRAM);' in script and 'REGION_ALIAS("REGION_RAM", CCM);' in script


def test_fit_check_names_region_and_bytes_over() -> None:
    f4 = load_target("stm32f4")
    check_fits(f4, Footprint(weights=1 << 20, arena=128 << 10))  # exactly full still fits
    with pytest.raises(BuildError, match=r"region SRAM needs 153792 bytes \(arena\) but has 131072 "
                                                    r"\(22720 bytes over\) \(sizes in bytes: weights 0, ram 32768, "
                                                    r"arena 153792\)"):
        check_fits(f4, Footprint(arena=153792))
