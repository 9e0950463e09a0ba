"""The default report of two keras-io programs fits on a screen, problem first, and its fixes work.

`programs/conditional_gan.py` (a custom `train_step` with two optimizers of its own)
and `programs/ner_transformer.py` (a transformer trained and used for `predict` on
sentences of varying length) run under `traceguard run` as a user runs them. Their
reports were 264 and 592 lines long, the same why/fix repeated per layer; now each
problem is said once. The GAN's fix is pasted into the program and run again: the
step traces once, by TensorFlow's own count. About 40 s a program on 2 cores.
"""

import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

from traceguard import _compat

pytestmark = [pytest.mark.backend("tensorflow"), pytest.mark.slow,
              # The keras-io programs here are Keras 3's (keras.ops, LeakyReLU(negative_slope)).
              pytest.mark.skipif(not _compat.IS_KERAS_3,
                                 reason="Keras 3 programs (keras-io); tf.keras is Keras 2 here")]

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = pathlib.Path(__file__).parent / "programs"


def run_program(name, tmp_path, *options, **environment):
    """Runs a program under `traceguard run`; its report's lines and its own output."""
    report = tmp_path / f"{name}.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3", **environment}
    result = subprocess.run([sys.executable, "-m", "traceguard", "run", "--output", str(report), *options,
                             str(PROGRAMS / f"{name}.py")], capture_output=True, text=True, env=env,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return report.read_text().splitlines(), result.stdout


def problem(lines, rank):
    """The lines of problem number `rank`, joined, its wrapping undone."""
    start = next(number for number, line in enumerate(lines) if line.startswith(f"{rank}. "))
    end = next(number for number in range(start + 1, len(lines))
               if not lines[number].startswith("   "))
    return start, re.sub(r"\s+", " ", " ".join(lines[start:end]))


def tracing_counts(stdout):
    """The program's last line: TensorFlow's own `experimental_get_tracing_count()` per function."""
    line = next(line for line in stdout.splitlines() if line.startswith("tracing counts: "))
    return ast.literal_eval(line.removeprefix("tracing counts: "))


def test_gan_report_names_the_step_optimizers_and_the_fix_removes_the_retrace(tmp_path):
    lines, stdout = run_program("conditional_gan", tmp_path)
    assert tracing_counts(stdout)["one_step_on_data"] == 2
    assert len(lines) <= 60, "\n".join(lines)
    start, text = problem(lines, 1)
    assert start < 15
    assert text.startswith("1. `one_step_on_data`: 1 variable retrace (#2), ")
    fixes = re.findall(r"`(cond_gan\.\w+\.build\([\w.]+\))`", text)
    assert fixes == ["cond_gan.d_optimizer.build(cond_gan.discriminator.trainable_variables)",
                     "cond_gan.g_optimizer.build(cond_gan.generator.trainable_variables)"]
    assert "model.optimizer" not in text and "This layer" not in text
    # Its 18 layers' 36 runs in that trace are one line, not 18 blocks of why and fix.
    assert "layers: 18 layers ran 36 times in it (generator, " in text
    assert sum("why:" in line for line in lines) == 1

    fixed, stdout = run_program("conditional_gan", tmp_path, GAN_FIX="; ".join(fixes))
    assert tracing_counts(stdout) == {"multi_step_on_iterator": 1, "one_step_on_data": 1}
    assert "No problems: nothing traced more than once." in fixed


def test_ner_report_names_every_changed_dimension_of_predict(tmp_path):
    lines, _ = run_program("ner_transformer", tmp_path)
    assert len(lines) <= 60, "\n".join(lines)
    problems = [line for line in lines if re.match(r"\d+\. ", line)]
    assert [line.split(":")[0] for line in problems] == ["1. `one_step_on_data`",
                                                          "2. `one_step_on_data_distributed`"]
    assert problem(lines, 1)[0] < 15
    _, predict = problem(lines, 2)
    assert "changed: data[0]: dim 0 1 -> 32; data[0]: dim 1 8 -> 40" in predict
    assert ("fix: `predict` got inputs of a new shape (batch size 1 -> 32 and dimension 1 (the sequence "
            "length) 8 -> 40)") in predict
    assert "pad the sequences to one length" in predict and "batch and length dimensions are None" in predict
    assert "Keep every prediction" not in "\n".join(lines)
    _, train = problem(lines, 1)
    assert "`ner_model.optimizer.build(ner_model.trainable_variables)`" in train
