"""The docs stay true to the tree: every repository path README.md, CONTRIBUTING.md,
docs/ARCHITECTURE.md and docs/BENCHMARKS.md name exists, every link of the docs leads to a
file and heading that exist, and every count they state that the
code can give (compositions, model entries, protocols) is the code's own."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hydra_proxy.server.app import MODEL_ENTRIES
from hydra_proxy.transducers import COMPOSITIONS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "CONTRIBUTING.md", "docs/ARCHITECTURE.md", "docs/BENCHMARKS.md")
# What the docs name lives in these folders; build output (target/, .venv/) does not count.
TREE_ROOTS = (".ci", "benches", "deploy", "docs", "fuzz", "python", "rust", "tests")
# Made by a command the doc shows, never in a checkout.
BUILT = {"fuzz/target", "target/wheels/*.whl"}
NUMBERS = {
    word: n
    for n, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
# A backticked token that reads as a path: a folder/name, or a bare file name; a
# pattern (`tests/*/test_*.py`) must match one.
PATH = re.compile(r"^\.?[\w.{},*-]+(/[\w.{},*-]*)+$|^[\w{},-]+\.(py|rs|md|toml|pyi|yaml)$")


def tree() -> set[str]:
    """Every file and folder of the repository, as paths relative to its root."""
    paths = {p.name for p in ROOT.iterdir()}
    for top in TREE_ROOTS:
        for p in (ROOT / top).rglob("*"):
            if "__pycache__" not in p.parts and "target" not in p.parts:
                paths.add(p.relative_to(ROOT).as_posix())
    return paths


def expanded(path: str) -> Iterator[str]:
    """`a/{b,c}.rs` as `a/b.rs` and `a/c.rs`; `x.rs/py` as `x.rs` and `x.py`."""
    brace = re.search(r"\{([^}]*)\}", path)
    if brace:
        for alt in brace.group(1).split(","):
            yield from expanded(path[: brace.start()] + alt + path[brace.end() :])
    elif path.endswith(".rs/py"):
        yield path.removesuffix("/py")
        yield path.removesuffix(".rs/py") + ".py"
    else:
        yield path


def named_paths(doc: str) -> list[str]:
    text = (ROOT / doc).read_text("utf-8")
    tokens = re.findall(r"`([^`\n]+)`", text)
    return sorted({t for t in tokens if PATH.match(t) and "://" not in t and t not in BUILT})


TREE = tree()
# The docs name a path from the root (`python/hydra_proxy/...`) or, where the sentence
# has said where it is, from a folder inside (`server/app.py`, `chat/mapping`): either is
# true when it is the tail of a real path; a module may be named without its extension.
TAILS = {
    tail
    for path in TREE
    for parts in [path.split("/")]
    for i in range(len(parts))
    for name in ["/".join(parts[i:])]
    for tail in (name, name.removesuffix(".py"), name.removesuffix(".rs"))
}


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_doc_names_exists(doc: str) -> None:
    missing = [
        path
        for token in named_paths(doc)
        for path in expanded(token)
        if not (
            fnmatch.filter(TAILS, path.rstrip("/")) if "*" in path else path.rstrip("/") in TAILS
        )
    ]
    assert missing == []


def test_the_composition_count_is_the_tables() -> None:
    decoders = {upstream for upstream, _ in COMPOSITIONS}
    encoders = {client for _, client in COMPOSITIONS}
    for doc in ("docs/ARCHITECTURE.md",):
        text = " ".join((ROOT / doc).read_text("utf-8").split())
        found = re.findall(r"(\w+) pairs of the (\w+) decoders and (\w+) encoders", text)
        assert found, f"{doc} no longer states the compositions"
        for pairs, n_decoders, n_encoders in found:
            assert (NUMBERS[pairs], NUMBERS[n_decoders], NUMBERS[n_encoders]) == (
                len(COMPOSITIONS),
                len(decoders),
                len(encoders),
            )


def test_the_model_entry_count_is_the_tables() -> None:
    text = " ".join((ROOT / "docs/ARCHITECTURE.md").read_text("utf-8").split())
    found = re.findall(r"its (\w+) entries, of (\w+) client protocols", text)
    assert found, "docs/ARCHITECTURE.md no longer states the model entries"
    protocols = {entry.protocol for entry in MODEL_ENTRIES}
    for entries, n_protocols in found:
        assert (NUMBERS[entries], NUMBERS[n_protocols]) == (len(MODEL_ENTRIES), len(protocols))


def test_every_server_module_is_in_the_architecture() -> None:
    """Every module of server/, in its folder: named by its path below server/ (or a longer
    one ending so)."""
    server = ROOT / "python/hydra_proxy/server"
    named = {path for token in named_paths("docs/ARCHITECTURE.md") for path in expanded(token)}
    modules = sorted(
        p.relative_to(server).as_posix() for p in server.rglob("*.py") if p.stem != "__init__"
    )
    assert len(modules) > 20, "the walk reads every folder of the server"
    assert [m for m in modules if not any(n == m or n.endswith("/" + m) for n in named)] == []


def test_every_test_folder_and_package_folder_is_in_contributing() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text("utf-8")
    tests = text[text.index("## Tests") : text.index("## Layout")]
    layout = text[text.index("## Layout") : text.index("## The twin rule")]
    test_folders = sorted(
        p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and any(p.glob("test_*.py"))
    )
    packages = sorted(
        p.name
        for p in (ROOT / "python/hydra_proxy").iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    )
    assert [f for f in test_folders if not re.search(rf"\b{f}/", tests)] == []
    assert [p for p in packages if not re.search(rf"\b{p}/", layout)] == []


def anchor(heading: str) -> str:
    """The fragment a Markdown renderer gives a heading (GitHub's rule)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", doc.read_text("utf-8"), flags=re.S)
    return {anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize(
    "doc", sorted({*DOCS, *(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))})
)
def test_every_link_of_a_doc_leads_somewhere(doc: str) -> None:
    source = ROOT / doc
    text = source.read_text("utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, fragment = target.partition("#")
        linked = (source.parent / path).resolve() if path else source
        if not linked.exists() or (
            linked.suffix == ".md" and fragment and fragment not in anchors(linked)
        ):
            broken.append(target)
    assert broken == []
