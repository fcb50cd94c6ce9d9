"""Credentials never leak: a user and password in --prometheus's URL, a bearer token, a --header value and a
password file reach the server and nothing else (no output line, JSON answer, crash file or redirect to
another origin); a secret file that cannot be used is refused in one line that does not repeat it."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gpumem_tui.cli import main
from gpumem_tui.sources.prometheus.client import PrometheusClient, PrometheusError, connect
from tests.sources.prometheus.conftest import AT
from tests.sources.prometheus.fake import answering
from tests.sources.prometheus.server import free_port, running
from tests.sources.prometheus.test_fleet_failures import PASSWORD_HASH

SECRET = "SECRET-LINE1"
EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


@pytest.fixture
def crash_files(tmp_path, monkeypatch) -> Iterator[list[str]]:
    """The crash files written during the test (each one's text), into a temp directory of its own."""
    folder = tmp_path / "crashes"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    found: list[str] = []
    yield found
    found += [path.read_text() for path in folder.iterdir()]


def _said(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    return captured.out + captured.err


def _token(tmp_path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "token"
    path.write_bytes(text.encode("utf-8"))
    path.chmod(mode)
    return str(path)


@pytest.mark.parametrize(
    "text, words",
    [
        pytest.param(f"{SECRET}\nSECRET-LINE2\n", "the token holds a space, a line break", id="line-break"),
        pytest.param(f"{SECRET}\x1b[2J", "a control character", id="escape"),
        pytest.param(f"t\u00f6k{SECRET}", "the token is not ASCII text", id="not-ascii"),
        pytest.param("\n", "the file holds no token", id="empty"),
        pytest.param(SECRET * 10_000, "over 64 KiB", id="too-large"),
    ],
)
@pytest.mark.parametrize("action, code", [("check", 3), ("snapshot", 2)])
def test_a_token_file_is_checked_when_read_and_never_repeated(tmp_path, capsys, crash_files, text, words, action, code):
    """Before: a line break inside was sent, and httpx's refusal printed it whole (`Illegal header value
    b'Bearer SECRET-LINE1\\nSECRET-LINE2'`); a non-ASCII one was a crash (exit 70)."""
    with answering(200, EMPTY) as url:
        argv = ["fleet", action, "--prometheus", url, "--at", str(AT), "--bearer-token-file", _token(tmp_path, text)]
        assert main(argv) == code
    said = _said(capsys)
    assert words in said and SECRET not in said and "SECRET-LINE2" not in said and crash_files == []


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_a_token_file_must_be_a_regular_file(tmp_path, capsys, kind):
    """Before: /dev/zero was read until memory ran out, a FIFO waited for a writer for ever."""
    paths = {"device": "/dev/zero", "directory": str(tmp_path)}
    if kind == "fifo":
        paths["fifo"] = str(tmp_path / "fifo")
        os.mkfifo(paths["fifo"])
    argv = ["fleet", "snapshot", "--prometheus", "http://127.0.0.1:1", "--bearer-token-file", paths[kind]]
    assert main(argv) == 2
    assert f"--bearer-token-file {paths[kind]}: not a regular file" in _said(capsys)


def test_a_ca_file_must_be_a_regular_file(capsys):
    assert main(["fleet", "snapshot", "--prometheus", "https://127.0.0.1:1", "--ca-file", "/dev/zero"]) == 2
    assert "--ca-file /dev/zero: not a regular file" in _said(capsys)


def test_a_token_file_others_can_read_is_warned_of_and_used(tmp_path, capsys):
    seen: list = []
    with answering(200, EMPTY, seen=seen) as url:
        argv = ["fleet", "check", "--prometheus", url, "--at", str(AT), "--bearer-token-file"]
        assert main([*argv, _token(tmp_path, f"{SECRET}\n", 0o644)]) == 3  # no node at all: UNKNOWN
        said = _said(capsys)
        assert "is readable by anyone (mode 0644); chmod 600 it" in said and SECRET not in said
        assert main([*argv, _token(tmp_path, f"{SECRET}\n", 0o600)]) == 3
        assert "readable" not in _said(capsys)
    assert {headers["Authorization"] for _, headers, _ in seen} == {f"Bearer {SECRET}"}


@pytest.mark.parametrize(
    "header", ["X-Key: s\u00e9cret-" + SECRET, f"X-Key: {SECRET}\x00", f"Authorization Bearer {SECRET}"]
)
def test_a_header_value_is_never_repeated(capsys, crash_files, header):
    """Before: a non-ASCII value was a crash (exit 70, a UnicodeEncodeError), a malformed one was repeated."""
    assert main(["fleet", "snapshot", "--prometheus", "http://127.0.0.1:1", "--header", header]) == 2
    said = _said(capsys)
    assert "--header" in said and SECRET not in said and crash_files == []


def test_a_user_and_password_in_the_url_are_sent_and_never_shown(capsys):
    """Before: `http://alice:hunter2@host` was the JSON's `source`, the text's last line, and every error."""
    seen: list = []
    with answering(200, EMPTY, seen=seen) as url:
        given = url.replace("http://", f"http://alice:{SECRET}@")
        assert main(["fleet", "snapshot", "--json", "--prometheus", given, "--at", str(AT)]) == 0
        said = _said(capsys)
        assert json.loads(said)["source"] == url
        assert main(["fleet", "check", "--prometheus", given, "--at", str(AT)]) == 3
        assert url in (said := _said(capsys)) and SECRET not in said and "alice" not in said
    assert {headers["Authorization"] for _, headers, _ in seen} == {"Basic " + _basic(f"alice:{SECRET}")}
    down = f"http://alice:{SECRET}@127.0.0.1:{free_port()}"
    for argv in (["fleet", "check", "--prometheus", down], ["check", "--prometheus", down, "--node", "n"]):
        assert main(argv) == 3
        said = _said(capsys)
        assert "cannot be reached" in said and SECRET not in said and "alice" not in said
    assert main(["fleet", "--prometheus", down, "check", "--prometheus", down + "/x"]) == 3  # repeated by argparse
    assert SECRET not in _said(capsys)


def _basic(pair: str) -> str:
    import base64

    return base64.b64encode(pair.encode()).decode()


def test_basic_auth_options_and_one_way_to_authenticate(tmp_path, capsys):
    password = tmp_path / "password"
    password.write_text(f"{SECRET}\n")
    password.chmod(0o600)
    seen: list = []
    with answering(200, EMPTY, seen=seen) as url:
        base = ["fleet", "snapshot", "--prometheus", url, "--at", str(AT)]
        assert main([*base, "--username", "alice", "--password-file", str(password)]) == 0
        assert SECRET not in _said(capsys)
        for more, words in (
            (["--password-file", str(password)], "--password-file needs --username"),
            (["--username", "alice", "--bearer-token-file", str(password)], "give one"),
        ):
            assert main([*base, *more]) == 2 and words in _said(capsys)
    assert seen[0][1]["Authorization"] == "Basic " + _basic(f"alice:{SECRET}")
    given = url.replace("http://", "http://bob:x@")
    assert main(["fleet", "snapshot", "--prometheus", given, "--username", "alice"]) == 2
    assert "give the user once" in _said(capsys)


@pytest.mark.prometheus
def test_a_real_prometheus_behind_basic_auth(fleet_blocks, tmp_path, capsys):
    """Prometheus's own basic auth (admin:test, its guide's example) through --username/--password-file and
    through the URL; the JSON names the server without them."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(fleet_blocks, data)
    web = tmp_path / "web.yml"
    web.write_text(f"basic_auth_users:\n  admin: {PASSWORD_HASH}\n", encoding="utf-8")
    password = tmp_path / "password"
    password.write_text("test\n")
    password.chmod(0o600)
    with running(data, web) as url:
        for how in (
            ["--prometheus", url, "--username", "admin", "--password-file", str(password)],
            ["--prometheus", url.replace("http://", "http://admin:test@")],
        ):
            assert main(["fleet", "snapshot", "--json", "--at", str(AT), *how]) == 0
            answer = json.loads(capsys.readouterr().out)
            assert answer["source"] == url and answer["coverage"]["nodes"] == 9


@contextmanager
def redirecting(to: str) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A server that answers every POST with a 307 to `to` (same path): its URL and each request's headers."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            self.rfile.read(int(self.headers.get("content-length", 0)))
            seen.append(dict(self.headers))
            self.send_response(307)
            self.send_header("Location", to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("auth", ["token", "basic"])
def test_headers_and_credentials_never_follow_a_redirect_to_another_origin(tmp_path, auth):
    """Before: httpx dropped Authorization on such a redirect but sent every --header on (X-Scope-OrgID, an
    API key) to wherever the server pointed."""
    token = _token(tmp_path, SECRET)
    elsewhere: list = []
    with answering(200, EMPTY, seen=elsewhere) as other, redirecting(other) as (url, here):
        given = url.replace("http://", f"http://alice:{SECRET}@") if auth == "basic" else url
        connection = connect(given, (("X-Api-Key", SECRET),), token if auth == "token" else None)

        async def ask() -> int:
            async with PrometheusClient(connection) as client:
                return len((await client.query("up", AT)).series)

        assert asyncio.run(ask()) == 0
    assert here[0]["X-Api-Key"] == SECRET  # the origin given had them
    assert here[0]["Authorization"].startswith("Bearer " if auth == "token" else "Basic ")
    assert elsewhere and all(SECRET not in json.dumps(headers) for _, headers, _ in elsewhere)
    assert all("Authorization" not in headers for _, headers, _ in elsewhere)


def test_a_token_made_unusable_while_running_is_one_line_that_does_not_repeat_it(tmp_path):
    """The fleet screen reads the token at each refresh (a rotated token is taken): one that turns bad is a
    failed read in the screen's words, never the token."""
    token = _token(tmp_path, SECRET)
    connection = connect("http://127.0.0.1:1", (), token)
    _token(tmp_path, f"{SECRET}\nSECRET-LINE2")
    with pytest.raises(PrometheusError) as caught:
        PrometheusClient(connection)
    assert "the token holds a space, a line break" in caught.value.said()
    assert SECRET not in caught.value.said()
