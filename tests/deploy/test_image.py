"""deploy/Containerfile, which no machine here can build (no container builder): it copies the wheel this
project builds, installs it, runs as a user that is not root, and its entrypoint is the wheel's console
script with a command the CLI has."""

from __future__ import annotations

import configparser
import fnmatch
import json
import re
import zipfile

from gpumem_tui.cli import build_parser
from tests.deploy.conftest import DEPLOY

CONTAINERFILE = DEPLOY / "Containerfile"


def instructions() -> dict[str, list[str]]:
    """Each instruction's arguments, in order (comments and continuation lines are not used in the file)."""
    found: dict[str, list[str]] = {}
    for line in CONTAINERFILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.setdefault(word, []).append(rest.strip())
    return found


def test_the_image_installs_the_wheel_the_project_builds(wheel):
    steps = instructions()
    [copy] = steps["COPY"]
    source, _ = copy.split()
    assert fnmatch.fnmatch(wheel.name, source.removeprefix("dist/")), (wheel.name, source)
    [run] = steps["RUN"]
    assert re.search(r"pip install .*" + re.escape(source.removeprefix("dist/")), run)
    [user] = steps["USER"]
    assert not {"0", "root"} & set(user.split(":"))
    [base] = steps["FROM"]
    assert re.fullmatch(r"\S+/python:3\.\d+-slim", base)


def test_the_entrypoint_is_the_wheel_s_console_script_running_export(wheel):
    [entrypoint] = instructions()["ENTRYPOINT"]
    script, command, *options = json.loads(entrypoint)
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
        entry_points = configparser.ConfigParser()
        entry_points.read_string(archive.read(name).decode())
    assert entry_points["console_scripts"][script] == "gpumem_tui.__main__:main"
    assert build_parser().parse_args([command, *options]).command == "export"
