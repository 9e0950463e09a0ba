"""`FunctionId`: a traced function's key in `Explanation.functions`, equal to its text."""

import json
import pickle

from traceguard._core.functions import FunctionId
from traceguard._core.specs import Site


def test_a_function_id_is_its_name_and_def_site_and_equals_their_text():
    key = FunctionId("Trainer.train_step", Site("train.py", 12))
    assert (key.qualname, key.definition) == ("Trainer.train_step", Site("train.py", 12))
    assert str(key) == "Trainer.train_step (train.py:12)" and type(str(key)) is str
    assert {key: 1}["Trainer.train_step (train.py:12)"] == 1
    assert json.dumps({key: 1}) == '{"Trainer.train_step (train.py:12)": 1}'

def test_a_function_id_without_a_site_is_its_name_and_pickles_as_its_parts():
    assert FunctionId("<lambda>") == "<lambda>" and FunctionId("<lambda>").definition is None
    copy = pickle.loads(pickle.dumps(FunctionId("f", Site("a.py", 3))))
    assert (type(copy), copy.qualname, copy.definition) == (FunctionId, "f", Site("a.py", 3))
