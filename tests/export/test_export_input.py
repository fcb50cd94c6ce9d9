"""`gpumem-tui export` refuses bad input with one line and a non-zero exit, before it serves anything; it
binds to loopback unless told otherwise, and serving other interfaces needs --allow-remote."""

from __future__ import annotations

import socket

import pytest

from gpumem_tui.cli import build_parser, main
from gpumem_tui.export.limits import Limits
from tests.cli.test_snapshot_cmd import nvml_works


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_it_listens_on_loopback_by_default():
    args = build_parser().parse_args(["export"])
    assert (args.listen.host, args.listen.port) == ("127.0.0.1", 9877)


def test_the_listener_s_limits_default_to_its_own():
    args = build_parser().parse_args(["export"])
    limits = Limits()
    assert (args.max_connections, args.request_timeout, args.answer_timeout) == (
        limits.connections,
        limits.request_s,
        limits.answer_s,
    )


@pytest.mark.parametrize("listen", ["0.0.0.0:9877", "[::]:9877", "10.1.2.3:9877", "*:9877"])
def test_other_interfaces_need_allow_remote(listen, capsys):
    assert main(["export", "--demo", "healthy-8b", "--listen", listen]) == 2
    assert "--allow-remote" in _one_line(capsys)


def test_the_address_checked_is_the_one_bound():
    """`*` resolves to loopback for a client and to every interface for a server: it is checked as bound."""
    from gpumem_tui.export.listener import resolve

    assert not resolve("*", 9877).loopback
    assert resolve("localhost", 0).loopback


@pytest.mark.parametrize("listen", ["127.0.0.1", "127.0.0.1:port", "127.0.0.1:70000", ":", "[::1:9877"])
def test_a_bad_listen_address(listen, capsys):
    assert main(["export", "--demo", "healthy-8b", "--listen", listen]) == 2
    assert _one_line(capsys).startswith("gpumem-tui: export: ")


def test_a_port_in_use(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["export", "--demo", "healthy-8b", "--at", "300", "--listen", f"127.0.0.1:{port}"]) == 2
    line = _one_line(capsys)
    assert f"127.0.0.1:{port}" in line and "in use" in line


def test_an_unknown_scenario(capsys):
    assert main(["export", "--demo", "no-such-scenario", "--listen", "127.0.0.1:0"]) == 2
    assert "no-such-scenario" in _one_line(capsys)


def test_an_unreadable_replay(tmp_path, capsys):
    missing = tmp_path / "missing.jsonl"
    assert main(["export", "--replay", str(missing), "--listen", "127.0.0.1:0"]) == 2
    assert "missing.jsonl" in _one_line(capsys)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not a recording\n", encoding="utf-8")
    assert main(["export", "--replay", str(garbage), "--listen", "127.0.0.1:0"]) == 2
    assert "garbage.jsonl" in _one_line(capsys)


@pytest.mark.parametrize(
    "option",
    [
        ["--interval", "0"],
        ["--top-processes", "-1"],
        ["--at", "99999"],
        ["--max-connections", "0"],
        ["--max-connections", "many"],
        ["--request-timeout", "nan"],
        ["--request-timeout", "0"],
        ["--answer-timeout", "-1"],
        ["--answer-timeout", "2", "--request-timeout", "3"],
    ],
)
def test_bad_numbers(option, capsys):
    assert main(["export", "--demo", "healthy-8b", "--listen", "127.0.0.1:0", *option]) == 2
    line = _one_line(capsys)
    assert option[0] in line and "invalid choice" not in line


def test_no_nvml_exits_3_before_serving(capsys):
    if nvml_works():
        pytest.skip("this machine has a working NVIDIA driver")
    assert main(["export", "--listen", "127.0.0.1:0"]) == 3
    line = _one_line(capsys)
    assert line.startswith("gpumem-tui: NVML unavailable:") and "--demo" in line
