"""The `qemu` marker of tests/conftest.py, applied at collection: a test is marked exactly when its
parameters, its code, its fixtures or the tests/ helpers it calls name a board that runs under QEMU
(boards.yaml run kind qemu-system / qemu-user), so `-m "not qemu"` is the quick loop. These tests
read their own marks; nothing is built or run."""
from __future__ import annotations

import pytest

M4 = "mps2-an386"  # a module-level constant read by a test marks it


def _helper_naming_a_board() -> str:
    return "mps3-an547"


@pytest.fixture
def aarch64_board() -> str:
    return "aarch64"


def _marked(request) -> bool:
    return request.node.get_closest_marker("qemu") is not None


def test_a_string_constant_in_the_test_marks_it(request):
    assert "aarch64-v80" and _marked(request)


def test_a_module_constant_marks_it(request):
    assert M4 and _marked(request)


def test_a_helper_of_the_module_marks_it(request):
    assert _helper_naming_a_board() and _marked(request)


def test_a_fixture_naming_a_board_marks_it(request, aarch64_board):
    assert _marked(request)


def test_host_only_is_not_marked(request):
    assert "host" and not _marked(request)


@pytest.mark.parametrize("board", ["host", "stm32f4", "host,mps2-an500"])
def test_parameters_mark_only_qemu_boards(request, board):
    assert _marked(request) == (board != "host")
