"""Arena placement over several memory regions (toolchain/placement.py) and what carries it: the
boards.yaml schema (arena lists, wait_states), the per-region plan and its checker, the linker
script's arena parts, the fit check per region and the plugin's region access counts."""
import copy

import pytest
import yaml
from graph_builder import GraphBuilder

from targets import BoardError, BuildError, default_boards_path, load_target
from targets.build import Footprint, check_fits
from targets.linker import linker_script
from targets.runlog import parse_plugin_log
from targets.target import CYCLE_CLASSES, target_from_mapping
from toolchain.memory import Buffer, MemoryPlan, PlanError, check_no_overlap, lifetimes, plan_memory
from toolchain.placement import RegionSpec, place, placement_cost, traffic

STOCK = yaml.safe_load(default_boards_path().read_text())["boards"]
REGIONS = [RegionSpec("TCM", 128, 0), RegionSpec("SRAM", 1200, 1), RegionSpec("PSRAM", 1 << 20, 8)]


def _graph():
    gb = GraphBuilder()
    x = gb.input("x", (1, 6, 6, 4))                                        # float32: 576 bytes
    c = gb.conv(x, 4, 3, pads=(1, 1, 1, 1), name="conv0", out="C0")        # 6*6*4 outputs x 36 MACs = 5184
    d = gb.conv(c, 4, 1, name="conv1", out="C1")                           # 6*6*4 x 4 = 576 MACs
    return gb.build(d)


def test_traffic_is_writes_plus_reads_per_mac():
    g = _graph()
    buffers, root = lifetimes(g, {"conv0": 100})
    assert traffic(g, buffers, root) == {
        "x": 576 + 5184,              # copied in, then read once per MAC of conv0
        "C0": 576 + 576,              # written by conv0, read once per MAC of conv1
        "C1": 576 + 576,              # written by conv1, copied out
        "scratch:conv0": 100 + 5184,  # written, then read as the operand of every MAC
    }


def test_place_fills_the_fastest_region_first():
    # density (traffic per byte): A 10, C 10, B 1, D 1; TCM 128 B, SRAM 400 B, PSRAM the rest
    buffers = [Buffer("A", 100, 0, 1), Buffer("B", 100, 1, 2), Buffer("C", 300, 0, 2), Buffer("D", 50, 2, 2)]
    moved = {"A": 1000, "B": 100, "C": 3000, "D": 50}
    regions = [RegionSpec("SRAM", 400, 1), RegionSpec("PSRAM", 1 << 20, 8), RegionSpec("TCM", 128, 0)]
    region_of = place(buffers, moved, regions, 16)
    # A fits TCM; C (304) does not; B is live with A (112 + 112 > 128); D is not: it shares A's bytes
    assert region_of == {"A": "TCM", "D": "TCM", "C": "SRAM", "B": "PSRAM"}
    ws = {r.name: r.wait_states for r in regions}
    assert placement_cost(moved, region_of, ws) == 3000 * 1 + 100 * 8
    assert placement_cost(moved, dict.fromkeys(moved, "PSRAM"), ws) == 4150 * 8


def test_plan_memory_over_regions():
    g = _graph()
    plan = plan_memory(g, {"conv0": 100}, 16, regions=REGIONS)
    assert plan.region_of == {"x": "SRAM", "C0": "SRAM", "C1": "SRAM", "scratch:conv0": "TCM"}
    assert dict(plan.region_bytes) == {"TCM": 112, "SRAM": 1152, "PSRAM": 0}
    assert plan.arena_bytes == 1264 and plan.main_region == "TCM" and plan.main_bytes == 112
    assert plan.offsets["scratch:conv0"] == 0 and plan.offsets["x"] == 0  # offsets from each part's base
    assert (plan.base_of("x"), plan.base_of_buffer("scratch:conv0")) == ("a_SRAM", "a")
    one = plan_memory(g, {"conv0": 100}, 16)  # one region: as before, no region fields
    assert (one.region_of, one.region_bytes, one.base_of("x")) == ({}, {}, "a")
    with pytest.raises(PlanError, match="debug guards need one arena region"):
        plan_memory(g, {"conv0": 100}, 16, regions=REGIONS, guard_bytes=16)


def test_overlap_check_is_per_region():
    buffers = (Buffer("a", 32, 0, 1), Buffer("b", 32, 0, 1))
    same = dict(offsets={"a": 0, "b": 0}, arena_bytes=64, alignment=16, planner="x",
                tensor_buffer={"a": "a", "b": "b"})
    check_no_overlap(MemoryPlan(buffers, region_of={"a": "R1", "b": "R2"}, region_bytes={"R1": 32, "R2": 32}, **same))
    with pytest.raises(PlanError, match="overlap"):
        check_no_overlap(MemoryPlan(buffers, region_of={"a": "R1", "b": "R1"}, region_bytes={"R1": 32, "R2": 32},
                                    **same))
    with pytest.raises(PlanError, match="outside the 16 B arena part in R2"):
        check_no_overlap(MemoryPlan(buffers, region_of={"a": "R1", "b": "R2"}, region_bytes={"R1": 32, "R2": 16},
                                    **same))


def _board(arena, **ws):
    b = copy.deepcopy(STOCK["mps2-an386"])
    b["memory"]["regions"]["TCM"] = {"address": 0x20400000, "size": 1024, "wait_states": 0}
    for name, n in ws.items():
        b["memory"]["regions"][name]["wait_states"] = n
    b["memory"]["arena"] = arena
    return b


def test_board_schema_arena_list_and_wait_states():
    t = target_from_mapping("x", _board(["TCM", "PSRAM"], PSRAM=8))
    assert (t.memory.arena, t.memory.arenas, t.memory.region("PSRAM").wait_states) == ("TCM", ("TCM", "PSRAM"), 8)
    assert load_target("mps2-an386").memory.arenas == ("PSRAM",)
    assert {r.wait_states for r in load_target("mps2-an386").memory.regions} == {0}
    for arena, ws, why in ((["TCM", "NOPE"], {}, "region 'NOPE' is not in memory.regions"),
                           (["TCM", "TCM"], {}, "a list of different region names"),
                           ("PSRAM", {"PSRAM": -1}, "expected an integer 0..1000"),
                           ("PSRAM", {"PSRAM": True}, "expected an integer 0..1000")):
        with pytest.raises(BoardError, match=why):
            target_from_mapping("x", _board(arena, **ws))


def test_linker_script_places_each_arena_part():
    several = target_from_mapping("x", _board(["TCM", "PSRAM"], PSRAM=8))
    script = linker_script(several)
    assert ".arena_PSRAM (NOLOAD) : ALIGN(BUFFER_ALIGN) { KEEP(*(.bss.*_arena.PSRAM)) } > PSRAM AT > PSRAM" in script
    assert script.index(".arena_PSRAM") < script.index(".bss (NOLOAD)")  # before .bss's ".bss.*" takes it
    assert 'REGION_ALIAS("REGION_ARENA", TCM);' in script
    stock = linker_script(load_target("mps2-an386"))
    assert "@ARENA_PARTS@" not in stock and ".arena_" not in stock


def test_fit_check_per_arena_part():
    t = target_from_mapping("x", _board(["TCM", "PSRAM"], PSRAM=8))
    check_fits(t, Footprint(arena=1024 + 4096, arena_parts={"TCM": 1024, "PSRAM": 4096}))
    with pytest.raises(BuildError, match=r"region TCM needs 1040 bytes \(arena\) but has 1024 \(16 bytes over\).*"
                                         r"arena 5136 \(1040 in TCM, 4096 in PSRAM\)"):
        check_fits(t, Footprint(arena=1040 + 4096, arena_parts={"TCM": 1040, "PSRAM": 4096}))


def test_plugin_log_with_region_accesses():
    zeros = " ".join(f"{c}=0" for c in CYCLE_CLASSES[1:])
    log = "\n".join([
        "tcount: v2 total_insns=30 marks=2 dropped=0 exact=1",
        f"tcount: classes load=30 {zeros}",
        "tcount: regions acc=7,9",
        f"tcount: mark 0 which=0 insns=10 load=10 {zeros} acc=1,2",
        f"tcount: mark 1 which=1 insns=20 load=20 {zeros} acc=5,8",
    ])
    counts = parse_plugin_log(log, 2, classes=True, n_regions=2)
    assert counts.class_totals[-2:] == (7, 9)
    assert [c[-2:] for c in counts.mark_classes] == [(1, 2), (5, 8)]
    assert len(counts.mark_classes[0]) == len(CYCLE_CLASSES) + 2
    with pytest.raises(Exception, match="2 region access counts, expected 3"):
        parse_plugin_log(log.replace("tcount: regions acc=7,9", "tcount: regions acc=7,9,1"), 2, True, 3)
    with pytest.raises(Exception, match="expected a 'tcount: regions"):
        parse_plugin_log(log.replace("tcount: regions acc=7,9\n", ""), 2, True, 2)
