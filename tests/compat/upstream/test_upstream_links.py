"""Every backend internal that `traceguard/_compat/` imports is linked to the upstream file it follows.

STYLE.md asks each check that pins a private API to link the upstream file or change it follows, so
that whoever fixes it after a release moved it starts from the right file. This reads the modules'
source only (no backend is imported), so it holds on every stack. It lives in a folder of its own:
pytest puts a test's folder on `sys.path`, where `tests/compat/tensorflow/` would pass for
TensorFlow on a stack without it.
"""

import ast
import pathlib
import re

import pytest

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")  # Reads source only.

COMPAT = pathlib.Path(__file__).parents[3] / "traceguard" / "_compat"

# A private module's top package -> (its GitHub repository, its top folder in that repository).
PRIVATE = {
    "tensorflow.python": "tensorflow/tensorflow",
    "keras.src": "keras-team/keras",
    "tf_keras.src": "keras-team/tf-keras",
    "jax._src": "jax-ml/jax",
    "torch._dynamo": "pytorch/pytorch",
    "torch._guards": "pytorch/pytorch",
    "torch._subclasses": "pytorch/pytorch",
}


def private_imports(source):
    """(line, candidate upstream paths) of each `import`/`from ... import` of a private module."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        if any(modules[0] == top or modules[0].startswith(top + ".") for top in PRIVATE):
            paths = [m.replace(".", "/") for m in modules]
            yield node.lineno, modules[0], [p + suffix for p in paths for suffix in (".py", "/__init__.py")]


def modules():
    return sorted(COMPAT.rglob("*.py"))


@pytest.mark.parametrize("module", modules(), ids=lambda path: str(path.relative_to(COMPAT)))
def test_each_private_import_links_its_upstream_file(module):
    source = module.read_text()
    links = set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+/blob/[\w.-]+/([\w/.-]+\.py)", source))
    missing = [f"line {line}: {name}" for line, name, candidates in private_imports(source)
               if not links.intersection(candidates)]
    assert not missing, (f"{module.name} imports internals without a link to the upstream file they "
                         f"follow (https://github.com/OWNER/REPO/blob/TAG/path.py): {missing}")


def test_the_check_finds_a_private_import_without_a_link():
    source = "from tensorflow.python.eager import context\n"
    [(line, name, candidates)] = private_imports(source)
    assert (line, name) == (1, "tensorflow.python.eager")
    assert "tensorflow/python/eager/context.py" in candidates
