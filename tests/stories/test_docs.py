"""The README and docs/ pages: every link resolves, every install line installs this package, and
the notebook page's example is the output of a real run."""

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

from traceguard import _compat

pytestmark = pytest.mark.backend("tensorflow")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page):
    """The anchors MkDocs and GitHub give a page's headings (for the headings these pages use)."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).strip().replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_names_an_existing_file_and_heading(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name} links to {target}, which does not exist"
        if anchor:
            assert anchor in anchors(linked), f"{page.name} links to {target}: no such heading"


@pytest.mark.parametrize("page", [*PAGES, ROOT / "CHANGELOG.md"], ids=lambda page: page.name)
def test_install_lines_name_the_keras_traceguard_distribution(page):
    # The index's `traceguard` is an unrelated package with the same import name.
    for line in page.read_text(encoding="utf-8").splitlines():
        for command in re.findall(r"pip install[^`|;&]*", line):
            assert not re.search(r"(?<![-\w])traceguard\b", command), f"{page.name}: {line}"


def public_names(module):
    """A module's `__all__`, read from its source: importing `traceguard.keras2` needs Keras 2."""
    source = (ROOT / "traceguard" / f"{module}.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"traceguard/{module}.py has no __all__")


# Public names the API page describes in prose rather than with a `:::` entry of their own.
DESCRIBED_IN_PROSE = {
    "traceguard.__version__", "traceguard.callbacks", "traceguard.testing",
    "traceguard.keras2.keras",  # A Keras namespace (tf_keras, or tf.keras on TF <= 2.15).
    "traceguard.keras2.TraceAwareMixin",  # The same class as traceguard.TraceAwareMixin.
}


@pytest.mark.parametrize("module", ["__init__", "testing", "callbacks", "keras2"])
def test_api_page_has_a_reference_entry_for_every_public_name(module):
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    prefix = "traceguard" if module == "__init__" else f"traceguard.{module}"
    missing = [f"{prefix}.{name}" for name in public_names(module)
               if f"::: {prefix}.{name}\n" not in api and f"{prefix}.{name}" not in DESCRIBED_IN_PROSE]
    assert not missing


# The notebook page's example: the two cells it describes, run as the kernel runs them (the setup
# compiled under the file name the kernel gave it), and the report `%%traceguard --summary` shows.
NOTEBOOK_EXAMPLE = """\
import pathlib, re, traceguard as tg
source = pathlib.Path("examples/train_loop_partial_batch.py").read_text()
setup = source[source.index("import os"):source.index("for _epoch in range(3):")]
namespace = {"__name__": "__main__"}
exec(compile(setup, "<ipython-input-1-7c9e7b92aa49>", "exec"), namespace)
with tg.watch() as report:
    # Line 1 of the cell is the `%%traceguard` line, as IPython numbers the cell's lines.
    exec(compile("\\nfor epoch in range(3):\\n    for x_batch, y_batch in dataset:\\n"
                 "        train_step(x_batch, y_batch)\\n", "<ipython-input-0-f4f3d568ac7d>", "exec"),
         namespace)
report.title = "cell In[0]"
print(report.summary(brief=True))
"""


def without_times(text):
    """The text with every time as `T` and runs of spaces as one, and a list of phases ("T tracing,
    T lowering", largest first) in one order: what differs between runs."""
    text = re.sub(r" +", " ", re.sub(r"\d+\.\d+ s\b", "T", text)).strip()
    return re.sub(r"T \w+(?:, T \w+)+", lambda phases: ", ".join(sorted(phases.group(0).split(", "))), text)


@pytest.mark.slow  # A Python process that imports TensorFlow.
@pytest.mark.skipif(not _compat.IS_KERAS_3, reason="the page shows Keras 3's run")
def test_notebook_page_example_is_the_report_of_a_real_run():
    page = (ROOT / "docs" / "notebooks.md").read_text(encoding="utf-8")
    shown = page[page.index("```text\ntraceguard report for cell In[0]") + len("```text\n"):]
    shown = shown[:shown.index("```")]
    result = subprocess.run([sys.executable, "-c", NOTEBOOK_EXAMPLE], capture_output=True, text=True,
                            cwd=ROOT, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert without_times(result.stdout) == without_times(shown)
