"""Options that a command and its actions both take (`fleet --header A:1 check --header B:2`), read from both
places. argparse parses an action's options into a namespace of their own and copies it over the command's,
so a repeatable option given after the action dropped the values given before it, and a single-valued one
given in both places silently took the later. Here a repeatable option keeps every value, before then
after; a single-valued one given twice with two values, or two options that exclude each other given one in
each place, is refused: "the last wins" holds within one place only."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from gpumem_tui.text import shown_url


class BothPlaces(argparse._SubParsersAction):
    """The subparsers action of a command whose actions repeat its options (`add_subparsers(action=...)`).
    The action's options must leave their defaults unset (`argparse.SUPPRESS`): only what was given after
    the action is then merged over what was given (or defaulted) before it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        assert isinstance(values, list)  # argparse hands a subparsers action the action's name and the rest
        after = argparse.Namespace()
        super().__call__(parser, after, values, option_string)
        action_parser = self._name_parser_map[values[0]]
        before = {a.dest: a for a in parser._actions}

        def given_before(dest: str) -> bool:
            known = before.get(dest)
            return known is not None and getattr(namespace, dest, None) != known.default

        for group in action_parser._mutually_exclusive_groups:
            dests = [a.dest for a in group._group_actions]
            later = [d for d in dests if hasattr(after, d)]
            earlier = [d for d in dests if given_before(d) and d not in later]
            if later and earlier:
                action_parser.error(
                    f"{_name(before[earlier[0]])} before the action and {_name(before[later[0]])} after it "
                    "exclude each other; give one"
                )
        for dest, value in vars(after).items():
            old = getattr(namespace, dest, None)
            if isinstance(old, list) and isinstance(value, list):
                value = old + value
            elif given_before(dest) and old != value:
                action_parser.error(
                    f"{_name(before[dest])} given before the action ({_shown(old)}) and after it "
                    f"({_shown(value)}); give it once"
                )
            setattr(namespace, dest, value)


def _name(action: argparse.Action) -> str:
    """The option's long name (`--selector`)."""
    return max(action.option_strings, key=len, default=action.dest)


def _shown(value: object) -> str:
    """A value as the error repeats it: a URL without its user and password."""
    return repr(shown_url(value)) if isinstance(value, str) else str(value)
