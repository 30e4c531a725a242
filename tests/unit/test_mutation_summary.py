"""scripts/mutation.py reads mutmut's verdicts right: the figure `make mutation` prints and gates on."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mutation.py"
spec = importlib.util.spec_from_file_location("mutation_script", SCRIPT)
mutation = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutation)

RESULTS = """\
    homecluster.model.a.x_f__mutmut_1: killed
    homecluster.model.a.x_f__mutmut_2: survived
    homecluster.model.a.x_f__mutmut_3: survived
    homecluster.model.b.xǁSettingsǁ__post_init____mutmut_4: survived
    homecluster.model.b.x_g__mutmut_1: timeout
    homecluster.model.b.x_g__mutmut_2: no tests
    homecluster.model.b.x_g__mutmut_3: killed
"""


def test_verdicts_and_survivors_per_function():
    verdicts, survivors = mutation.summarize(RESULTS)
    assert verdicts == {"killed": 2, "survived": 3, "timeout": 1, "no tests": 1}
    assert survivors == {"homecluster.model.a.x_f": 2, "homecluster.model.b.xǁSettingsǁ__post_init__": 1}


def test_the_percentage_counts_timeouts_as_caught_and_leaves_out_what_no_test_covers():
    verdicts, _ = mutation.summarize(RESULTS)
    assert mutation.killed_percent(verdicts) == 50.0  # (2 killed + 1 timeout) of 6 judged


def test_a_run_nothing_judged_is_not_a_figure():
    verdicts, _ = mutation.summarize("    homecluster.model.a.x_f__mutmut_1: not checked\n")
    assert mutation.judged(verdicts) == 0
    assert mutation.killed_percent(verdicts) == 0.0


def test_every_layer_mutates_a_package_that_exists_and_copies_what_the_tests_read():
    for layer, (globs, _tests) in mutation.LAYERS.items():
        for glob in globs:
            folder = Path(glob.replace("src/", "controller/", 1)).parent
            assert (mutation.REPO / folder).is_dir(), f"layer {layer}: {folder} does not exist"
        table = mutation.mutmut_table(layer)
        for needed in ("config", "plugins", "roles", "scripts"):
            assert f'"{needed}"' in table
        assert '"tests"' not in table.split("also_copy")[1]  # mutmut copies tests/ itself


def test_a_sample_is_drawn_from_every_mutant_the_same_way_for_the_same_seed():
    listing = RESULTS + "    homecluster.model.b.x_g__mutmut_4: not checked\n"
    names = mutation.mutant_names(listing)
    assert len(names) == 8 and "homecluster.model.b.x_g__mutmut_4" in names
    first = mutation.draw_sample(names, 4, seed=2)
    assert first == mutation.draw_sample(list(reversed(names)), 4, seed=2)  # the listing's order does not matter
    assert len(set(first)) == 4 and set(first) <= set(names)
    assert any(mutation.draw_sample(names, 4, seed=s) != first for s in range(3, 10))
    assert mutation.draw_sample(names, 50, seed=2) == names  # a sample larger than the layer is the layer


def test_a_sample_can_be_drawn_from_some_modules_only():
    names = ["homecluster.lifecycle.recorder.xǁRecorderǁevent__mutmut_1", "homecluster.lifecycle.reversal.x_cancel__mutmut_2",
             "homecluster.lifecycle.recorder.x_word__mutmut_3", "homecluster.lifecycle.slotevents.x_body__mutmut_4"]
    assert mutation.of_modules(names, ["recorder"]) == [names[0], names[2]]
    assert mutation.of_modules(names, ["recorder", "slotevents"]) == [names[0], names[2], names[3]]
    assert mutation.of_modules(names, ["record"]) == []  # a module's whole name, not a prefix of it
    assert mutation.of_modules(names, []) == names


def test_a_sample_is_judged_by_its_own_verdicts_only():
    chosen = {"homecluster.model.a.x_f__mutmut_1", "homecluster.model.b.x_g__mutmut_1"}
    verdicts, survivors = mutation.summarize(mutation.only(RESULTS, chosen))
    assert verdicts == {"killed": 1, "timeout": 1} and not survivors


def test_the_interval_of_a_sampled_share():
    low, high = mutation.wilson_interval(255, 300)  # 85 % of 300
    assert 80.5 < low < 81.0 and 88.5 < high < 89.0
    assert mutation.wilson_interval(0, 0) == (0.0, 100.0)
    assert mutation.wilson_interval(10, 10)[1] == 100.0 and mutation.wilson_interval(0, 10)[0] == 0.0


def test_the_layer_share_from_samples_of_its_module_groups():
    share, low, high = mutation.stratified([(1000, 90, 100)])  # one group: its own share
    assert share == 90.0 and 83.0 < low < 90.0 < high < 96.0
    share, low, high = mutation.stratified([(3000, 80, 100), (1000, 100, 100)])  # weighed by the groups' sizes
    assert share == 85.0 and low < 85.0 < high
    # a group with no survivor in its sample still carries uncertainty
    assert mutation.stratified([(1000, 100, 100)])[1] < 100.0
    # a group run whole is exact
    assert mutation.stratified([(50, 45, 50)]) == (90.0, 90.0, 90.0)


def test_groups_given_on_the_command_line():
    assert mutation.parse_strata("861:74/80, 948:71/80") == [(861, 74, 80), (948, 71, 80)]
    for bad in ("", "861:81/80", "80:70/90", "861-74/80", "861:74/0"):
        with pytest.raises(ValueError, match="--combine"):
            mutation.parse_strata(bad)
