"""boards.yaml loading and validation (no tools needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from targets import ISA, BoardError, RunKind, TimeSource, list_targets, load_target
from targets.target import target_from_mapping

REQUIRED = {"host", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547", "aarch64", "aarch64-v80"}


def _entry(name: str = "mps2-an386") -> dict:
    return yaml.safe_load((Path(__file__).resolve().parents[2] / "boards.yaml").read_text())["boards"][name]


def test_all_boards_load_and_validate() -> None:
    boards = {t.name: t for t in list_targets()}
    assert REQUIRED <= boards.keys()
    for t in boards.values():
        assert t.kernel_preference[-1] is ISA.PORTABLE
        assert t.preferred_layout == "NHWC"
        for role in ("code", "weights", "ram", "arena"):
            assert t.memory.region_for(role).size > 0


def test_board_fields() -> None:
    m4 = load_target("mps2-an386")
    assert m4.kernel_preference == (ISA.DSP, ISA.PORTABLE)
    assert m4.has_feature("dsp") and m4.has_feature("fpu")
    assert "-mfloat-abi=hard" in m4.cflags and "--specs=rdimon.specs" in m4.ldflags
    assert m4.run.kind is RunKind.QEMU_SYSTEM and m4.run.time_source is TimeSource.PLUGIN
    assert m4.run.cost_unit == "instructions" and m4.memory.region_for("arena").address == 0x21000000
    m55 = load_target("mps3-an547")
    assert m55.kernel_preference[0] is ISA.HELIUM
    assert (m55.memory.weights, m55.memory.arena, m55.memory.region("CODE").size) == ("SRAM", "ISRAM", 512 << 10)
    assert m55.memory.region("SRAM").address == 0x11000000
    host = load_target("host")
    assert host.run.kind is RunKind.NATIVE and host.run.cost_unit == "us" and host.cflags == ("-O2",)
    a64 = load_target("aarch64")
    assert a64.run.args == ("-cpu", "neoverse-n1") and "-static" in a64.ldflags
    assert load_target("mps2-an505").memory.region("CODE").address == 0x10000000
    assert m4.run_timeout_s(10**12) > m4.run_timeout_s(0) >= 3.0
    # the M55's MVE kernels emulate ~30x slower than its scalar code: their instructions get more time
    m55_run = m55.run
    assert m55_run.vector_ips is not None and m55_run.vector_ips < m55_run.guest_ips
    assert m55.run_timeout_s({"helium": 10**9}) > 10 * m55.run_timeout_s({"portable": 10**9})


def test_unknown_board_lists_known() -> None:
    with pytest.raises(BoardError, match=r"unknown board 'nope'; known boards: .*mps2-an386"):
        load_target("nope")


@pytest.mark.parametrize("alignment", [3, 2, 512, 24, "16"])
def test_bad_alignment(alignment: object) -> None:
    data = _entry() | {"buffer_alignment": alignment}
    with pytest.raises(BoardError) as e:
        target_from_mapping("mps2-an386", data)
    msg = str(e.value)
    assert msg.startswith("boards.yaml: board 'mps2-an386': field 'buffer_alignment'") and "power of two" in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"kernel_preference": ["helium", "portable"]}, "kernel_preference"),  # M4 has no MVE
        ({"kernel_preference": ["dsp"]}, "kernel_preference"),  # portable is mandatory
        ({"isa_features": ["dsp", "sse"]}, "isa_features"),
        ({"preferred_layout": "NWHC"}, "preferred_layout"),
        ({"run": {"kind": "qemu-system", "executable": "q", "time_source": "plugin", "cost_unit": "us",
                  "guest_ips": 0}}, "run.guest_ips"),  # fmt: skip
        ({"run": {"kind": "emulated"}}, "run.kind"),
        ({"description": None}, "description"),
    ],
)
def test_bad_fields_name_the_field(patch: dict, field: str) -> None:
    with pytest.raises(BoardError, match=rf"board 'mps2-an386': field '{field}'"):
        target_from_mapping("mps2-an386", _entry() | patch)


def test_bad_memory() -> None:
    mem = _entry()["memory"]
    with pytest.raises(BoardError, match=r"field 'memory.arena': region 'NOPE' is not in memory.regions"):
        target_from_mapping("x", _entry() | {"memory": mem | {"arena": "NOPE"}})
    regions = mem["regions"] | {"EXTRA": {"address": 0x20001000, "size": "1K"}}
    with pytest.raises(BoardError, match=r"memory.regions.EXTRA'?: overlaps region RAM"):
        target_from_mapping("x", _entry() | {"memory": mem | {"regions": regions}})
    with pytest.raises(BoardError, match=r"field 'memory.stack_size': expected a byte count"):
        target_from_mapping("x", _entry() | {"memory": mem | {"stack_size": "lots"}})


def test_custom_path_and_bad_yaml(tmp_path: Path) -> None:
    p = tmp_path / "boards.yaml"
    p.write_text(yaml.safe_dump({"boards": {"only": _entry("host")}}))
    assert [t.name for t in list_targets(p)] == ["only"]
    assert load_target("only", p).name == "only"
    p.write_text("boards: [unclosed\n")
    with pytest.raises(BoardError, match="invalid YAML"):
        load_target("only", p)
    p.write_text("other: 1\n")
    with pytest.raises(BoardError, match="top-level 'boards:'"):
        list_targets(p)
