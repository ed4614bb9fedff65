"""A non-editable install (`pip install .` into a fresh venv) carries everything a run needs (boards.yaml,
the C templates, board support, the plugin sources) and takes the user's own boards file.

Lean on purpose: the venv borrows this interpreter's site-packages for the dependencies (a .pth
line) and pip installs only edgecc (--no-deps; the build backend comes from PyPI as for any user).
About 20 s: one wheel build and one digits run."""
from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import yaml
from e2e_helpers import DIGITS_YAML, REPO

PACKAGE_FILES = ("toolchain", "targets", "quantize", "profiler", "c_templates", "boards.yaml", "pyproject.toml",
                 "README.md")


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def test_non_editable_install_runs_a_user_board(tmp_path, need_board):
    need_board("mps2-an386")
    src = tmp_path / "src"
    for name in PACKAGE_FILES:  # a copy: building in the work tree would leave build/ and *.egg-info there
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    base = getattr(sys, "_base_executable", sys.executable)
    assert _run([base, "-m", "venv", "--without-pip", venv], tmp_path, env).returncode == 0
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path,
                     env).stdout.strip())
    (site / "_edgecc_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q", src], tmp_path, env)
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]

    where = _run([python, "-c", "import targets, toolchain.codegen.emit as e; print(targets.__file__); "
                                "print(e.TEMPLATE_DIR)"], tmp_path, env).stdout.split()
    assert all(Path(w).is_relative_to(site) for w in where), where  # the installed copy, not the work tree

    mine = copy.deepcopy(yaml.safe_load((REPO / "boards.yaml").read_text())["boards"]["mps2-an386"])
    mine["memory"]["regions"]["PSRAM"]["size"] = "64K"
    boards = tmp_path / "my_boards.yaml"
    boards.write_text(yaml.safe_dump({"boards": {"my-m4": mine}}))
    edgecc = venv / "bin" / "edgecc"
    listed = _run([edgecc, "boards", "--boards", boards], tmp_path, env)
    assert listed.returncode == 0 and listed.stdout.splitlines()[-1].startswith("my-m4 "), listed.stdout + listed.stderr
    out = tmp_path / "out"
    job = _run([edgecc, "run", DIGITS_YAML, "--boards", boards, "--board", "my-m4", "--out", out, "--quiet"],
               tmp_path, env)
    assert job.returncode == 0, job.stdout + job.stderr
    assert job.stdout.startswith("edgecc: PASS"), job.stdout
    assert "LENGTH = 64K" in (out / "fw" / "my-m4.ld").read_text()
