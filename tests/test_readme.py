"""The README is what a newcomer reads in five minutes: at most MAX_WORDS words, no sentence past
MAX_SENTENCE_WORDS, no table cell past MAX_CELL_CHARS, every command in it one the CLI parses, every output it
shows what the command prints, every relative link a file. The reference is docs/commands.md, which names
every option of every command in that command's section."""

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from gpumem_tui.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMANDS = ROOT / "docs" / "commands.md"
PAGES = [README, COMMANDS, *(ROOT / "docs" / f"{name}.md" for name in ("screen", "configuration", "development"))]
"""The README and the pages that took over its reference: held to the same sentence, cell and link rules."""
MAX_WORDS = 1000
MAX_SENTENCE_WORDS = 40
MAX_CELL_CHARS = 200
INVOCATION = re.compile(r"^(?:gpumem-tui|python3? -m gpumem_tui)(?=\s|$)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
OPTION = r"(?<![\w-]){}(?![\w-])"


def prose(text: str) -> str:
    """The text without its fenced code blocks."""
    return FENCE.sub("", text)


def cells(text: str) -> list[str]:
    """Every cell of every table row, stripped."""
    rows = [line for line in prose(text).splitlines() if line.startswith("|")]
    return [cell.strip() for row in rows for cell in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def sentences(text: str) -> list[str]:
    """The sentences of the prose: paragraphs and list items joined across lines, each table cell alone, then
    split after `.`, `!` or `?` where the next word starts a sentence."""
    blocks: list[list[str]] = []
    for line in prose(text).splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "|", "![")):
            blocks.append([])
        elif re.match(r"([-*]|\d+\.)\s", stripped) or not blocks:
            blocks.append([stripped])
        else:
            blocks[-1].append(stripped)
    paragraphs = [" ".join(block) for block in blocks if block] + cells(text)
    return [s for p in paragraphs for s in re.split(r"(?<=[.!?])[*`)\"]*\s+(?=[A-Z`\[(*\"])", p) if s.strip()]


def slugs(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings."""
    headings = re.findall(r"^#+\s+(.+)$", prose(page.read_text(encoding="utf-8")), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def invocations(text: str) -> list[str]:
    """Each `gpumem-tui ...` or `python -m gpumem_tui ...` written in a code block or inline code, the shell
    prompt and anything joined to it by `&&` left out."""
    found = []
    lines = [line for block in FENCE.findall(text) for line in block.splitlines()]
    lines += re.findall(r"`([^`\n]+)`", prose(text))
    for line in lines:
        for part in line.removeprefix("$ ").split("&&"):
            if INVOCATION.match(part.strip()):
                found.append(part.strip())
    return found


def shown_runs(text: str) -> list[tuple[str, list[str]]]:
    """(command, the lines shown as its output) for each `$ gpumem-tui ...` line of a code block followed by
    output."""
    runs = []
    for block in FENCE.findall(text):
        for chunk in re.split(r"^(?=\$ )", block, flags=re.M):
            command, *shown = chunk.rstrip("\n").split("\n")
            if command.startswith("$ gpumem-tui") and shown:
                runs.append((command.removeprefix("$ "), shown))
    return runs


def unmatched(shown: list[str], printed: list[str]) -> str | None:
    """The first shown line the printed output does not hold where the README puts it, else None. A line
    `...` stands for lines left out; `...` inside a line for text left out. Shown lines with no `...` line
    between them are printed one after the other; the first and last shown lines are the output's own unless
    a `...` line is before or after them."""
    at, gap = 0, False
    for line in shown:
        if line.strip() == "...":
            gap = True
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in line.split("...")))
        while at < len(printed) and not pattern.fullmatch(printed[at]):
            if not gap:
                return line
            at += 1
        if at == len(printed):
            return line
        at, gap = at + 1, False
    return None if gap or at == len(printed) else "(the output goes on past the last line shown)"


def parsers(parser: argparse.ArgumentParser, path: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    """(command path, its parser) for the top level and every command and action under it."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += parsers(sub, f"{path} {name}".strip())
    return found


def section(page: str, path: str) -> str:
    """The `## ` section of docs/commands.md whose heading names `gpumem-tui PATH`."""
    name = f"`gpumem-tui {path}`".replace(" `", "`")
    for part in re.split(r"^(?=## )", page, flags=re.M):
        if part.startswith("## ") and name in part.splitlines()[0]:
            return part
    return ""


def test_the_readme_is_read_in_five_minutes():
    words = len(README.read_text(encoding="utf-8").split())
    assert words <= MAX_WORDS, f"README.md has {words} words; the reference belongs in docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_sentence_is_long(page):
    long = [s for s in sentences(page.read_text(encoding="utf-8")) if len(s.split()) > MAX_SENTENCE_WORDS]
    assert not long, f"{page.name}: sentences over {MAX_SENTENCE_WORDS} words:\n" + "\n".join(long)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_table_cell_is_long(page):
    long = [cell for cell in cells(page.read_text(encoding="utf-8")) if len(cell) > MAX_CELL_CHARS]
    assert not long, f"{page.name}: table cells over {MAX_CELL_CHARS} characters:\n" + "\n".join(long)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.is_file():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in slugs(linked):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_every_command_in_the_readme_parses():
    commands = invocations(README.read_text(encoding="utf-8"))
    assert len(commands) >= 5
    for command in commands:
        args = shlex.split(INVOCATION.sub("", command))
        _, unknown = build_parser().parse_known_args(args)  # a bad argument raises UsageError
        assert not unknown, f"README: `{command}`: unknown {unknown}"


RUNS = shown_runs(README.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("command", "shown"), RUNS, ids=[command for command, _ in RUNS])
def test_the_readme_shows_what_its_commands_print(command, shown):
    args = shlex.split(command)[1:]
    done = subprocess.run([sys.executable, "-m", "gpumem_tui", *args], capture_output=True, text=True, cwd=ROOT)
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    missing = unmatched([line.rstrip() for line in shown], printed)
    assert missing is None, (
        f"README: `{command}` does not print\n{missing}\nre-paste from what it prints:\n" + "\n".join(printed)
    )


def test_the_matcher_holds_order_adjacency_and_ends():
    printed = ["first", "second", "third: a long line", "last"]
    assert unmatched(["first", "...", "third: ...", "..."], printed) is None
    assert unmatched(["...", "second", "third: a ... line", "last"], printed) is None
    assert unmatched(["first", "third: a long line", "..."], printed) == "third: a long line"
    assert unmatched(["...", "last", "first"], printed) == "first"
    assert unmatched(["second", "..."], printed) == "second"
    assert unmatched(["first", "..."], printed) is None
    assert unmatched(["first"], printed) is not None


def test_every_option_of_every_command_is_in_its_section_of_the_reference():
    page = COMMANDS.read_text(encoding="utf-8")
    missing = []
    for path, parser in parsers(build_parser()):
        text = section(page, path)
        if not text:
            missing.append(f"no section headed `gpumem-tui {path}`")
            continue
        options = {s for action in parser._actions for s in action.option_strings if s.startswith("--")}
        missing += [
            f"{path or '(no command)'}: {o}"
            for o in sorted(options - {"--help"})
            if not re.search(OPTION.format(re.escape(o)), text)
        ]
    assert not missing, "docs/commands.md does not name:\n" + "\n".join(missing)
