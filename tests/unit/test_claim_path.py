"""scripts/claim_path.py: what it counts of a run (files, functions, file-to-file calls, returns to a file left)."""
from __future__ import annotations

from types import SimpleNamespace

from support.scripts import script

claim_path = script("claim_path")


def frame(file: str, name: str, back=None, line: int = 1):
    return SimpleNamespace(f_code=SimpleNamespace(co_filename=file, co_qualname=name, co_firstlineno=line), f_back=back)


def product(rel: str) -> str:
    return claim_path.PRODUCT + rel


def test_only_product_code_counts_and_a_call_is_charged_to_the_nearest_product_caller():
    trail = claim_path.Trail()
    outside = frame("/usr/lib/python3/asyncio/events.py", "_run")
    passer = frame(product("lifecycle/slotpass.py"), "run_pass", back=outside)
    glue = frame("/usr/lib/python3/contextlib.py", "__aenter__", back=passer)
    trail.see(outside)
    trail.see(passer)
    trail.see(frame(product("model/decide.py"), "decide", back=glue))
    trail.see(frame(product("lifecycle/slotpass.py"), "_always", back=passer))
    assert trail.files() == ["lifecycle/slotpass.py", "model/decide.py"]
    assert len(trail.functions) == 3
    assert trail.edges == {("lifecycle/slotpass.py", "model/decide.py")}  # a call within one file is no edge


def test_a_function_called_again_is_one_function_met_once():
    trail = claim_path.Trail()
    for _ in range(3):
        trail.see(frame(product("model/objects.py"), "dig"))
    assert len(trail.functions) == 1 and trail.returns() == 0


def test_returns_count_each_entry_into_a_file_already_left_in_first_call_order():
    trail = claim_path.Trail()
    for rel, name in (("a.py", "f"), ("a.py", "g"), ("b.py", "h"), ("a.py", "i"), ("c.py", "j"), ("b.py", "k"),
                      ("a.py", "f")):  # the last is f again: met already, no new stay
        trail.see(frame(product(rel), name))
    # stays in first-call order: a, b, a, c, b -> a and b entered again after being left
    assert trail.returns() == 2
    assert "files crossed: 3" in claim_path.report(trail, show_files=False)
    assert "  c.py" in claim_path.report(trail, show_files=True).splitlines()
