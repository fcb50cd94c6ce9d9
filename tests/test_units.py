"""Sizes: parsing user text into bytes, printing bytes with their unit."""

from pathlib import Path

import pytest

from gpumem_tui.units import GB, GIB, MIB, SizeError, fmt, fmt_auto, fmt_both, gib, parse_fraction, parse_size


@pytest.mark.parametrize(
    "text, expected",
    [
        ("80GB", 80 * GB),
        ("79.19GiB", round(79.19 * GIB)),
        ("81559MiB", 81_559 * MIB),
        ("141 GB", 141 * GB),
        ("512B", 512),
        ("1,024 MiB", 1024 * MIB),
        ("0.5 TB", 5 * 10**11),
        (" 4GIB ", 4 * GIB),
        ("80gb", 80 * GB),
        ("0.5 tb", 5 * 10**11),
        (" 4gib ", 4 * GIB),
        ("512b", 512),
        ("2 kB", 2000),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["80", "eighty GB", "80 GX", "-4GB", "", "1.2.3GB"])
def test_bad_sizes_are_refused_with_a_reason(text):
    with pytest.raises(SizeError) as err:
        parse_size(text)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("80Gb", "size '80Gb': a lower-case b is bits; write bytes with a B, like 80GB"),
        ("0.5 Tb", "size '0.5 Tb': a lower-case b is bits; write bytes with a B, like 0.5TB"),
        (" 4GIb ", "size ' 4GIb ': a lower-case b is bits; write bytes with a B, like 4GiB"),
        ("512Mb", "size '512Mb': a lower-case b is bits; write bytes with a B, like 512MB"),
        ("-80GB", "size '-80GB' is negative; sizes are positive, like 80GB or 79.2GiB"),
    ],
)
def test_bits_and_negative_sizes_are_refused_with_what_to_write(text, said):
    """`--gpu-memory 80Gb` was read as 80 GB (gigabits are 8 times less); `-80GB` said only 'cannot read'."""
    with pytest.raises(SizeError) as err:
        parse_size(text)
    assert str(err.value) == said


def test_gb_and_gib_are_never_confused():
    h100 = 81_559 * MIB
    assert fmt(h100, "GB") == "85.5 GB"
    assert fmt(h100, "GiB") == "79.6 GiB"
    assert fmt_both(h100) == "85.5 GB (79.6 GiB)"
    assert fmt(None) == "n/a"


def test_auto_units():
    assert fmt_auto(512 * MIB) == "512.0 MiB"
    assert fmt_auto(2 * GB, binary=False) == "2.0 GB"
    assert fmt_auto(100) == "100 B"


@pytest.mark.parametrize("text, value", [("0.9", 0.9), ("90%", 0.9), ("10%", 0.1)])
def test_parse_fraction(text, value):
    assert parse_fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["1.5", "0", "ninety", "-5%"])
def test_bad_fractions(text):
    with pytest.raises(SizeError):
        parse_fraction(text)


def test_gib_is_the_one_way_a_size_is_said_in_gib():
    """Findings, vLLM's start-up risks, the plan's cross-check and the snapshot's host line say GiB alike."""
    assert gib(12.345 * GIB) == "12.35 GiB"
    assert gib(1234 * GIB) == "1,234.00 GiB"  # thousands grouped, as every other size printed
    assert gib(3.5 * GIB, digits=1) == "3.5 GiB"
    assert gib(1.9 * GIB, unit=False) == "1.90"


def test_no_module_keeps_its_own_gib_helper():
    """One `gib` (units.py): a second copy would drift in digits, grouping or unit."""
    import ast

    root = Path(__file__).resolve().parents[1] / "gpumem_tui"
    copies = [
        f"{path.relative_to(root)}:{node.lineno}"
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name in ("gib", "_gib") and path.name != "units.py"
    ]
    assert copies == []
