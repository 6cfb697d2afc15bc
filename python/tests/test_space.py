"""agora.Space and its parameters: kinds, unit-cube mapping, candidates, JSON, numpy."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

import agora


def mixed() -> agora.Space:
    return agora.Space(
        [
            agora.real("x", -1.0, 3.0),
            agora.log_real("lr", 1e-4, 1e-1),
            agora.integer("n", 1, 4),
            agora.categorical("c", ["a", "b", "c"]),
        ]
    )


# --- parameters ------------------------------------------------------------------------


def test_real_param():
    p = agora.real("x", -1, 3)
    assert (p.name, p.kind, p.bounds, p.choices) == ("x", "real", (-1.0, 3.0), None)


def test_log_real_param():
    p = agora.log_real("lr", 1e-4, 1e-1)
    assert (p.name, p.kind, p.bounds, p.choices) == ("lr", "log_real", (1e-4, 1e-1), None)


def test_integer_param():
    p = agora.integer("n", 1, 4)
    assert (p.name, p.kind, p.bounds, p.choices) == ("n", "integer", (1, 4), None)
    assert all(isinstance(b, int) for b in p.bounds)


def test_categorical_param():
    p = agora.categorical("c", ["a", "b", "c"])
    assert (p.name, p.kind, p.bounds, p.choices) == ("c", "categorical", None, ["a", "b", "c"])


@pytest.mark.parametrize("param", mixed().params, ids=lambda p: p.kind)
def test_param_repr_rebuilds_it(param):
    assert eval(repr(param), {"agora": agora}) == param


def test_params_compare_by_value():
    assert agora.real("x", 0, 1) == agora.real("x", 0.0, 1.0)
    assert agora.real("x", 0, 1) != agora.real("x", 0, 2)
    assert agora.real("x", 0, 1) != agora.log_real("x", 0.5, 1)


# --- box spaces --------------------------------------------------------------------------


def test_box_shape():
    s = mixed()
    assert s.kind == "box"
    assert len(s) == 4
    assert s.names == ["x", "lr", "n", "c"]
    # One unit coordinate per real, log-real and integer; one per choice of a categorical.
    assert s.dim == 1 + 1 + 1 + 3
    assert [p.kind for p in s.params] == ["real", "log_real", "integer", "categorical"]


def test_reals():
    s = agora.Space.reals([(0, 1), (-2, 5)])
    assert s.names == ["x0", "x1"]
    assert [p.bounds for p in s.params] == [(0.0, 1.0), (-2.0, 5.0)]


def test_real_maps_linearly():
    s = mixed()
    u = s.to_unit({"x": 1.0, "lr": 1e-4, "n": 1, "c": "a"})
    assert u[0] == pytest.approx(0.5)
    assert s.to_user([0.75, 0, 0, 1, 0, 0])["x"] == pytest.approx(2.0)


def test_log_real_maps_on_a_log_scale():
    s = mixed()
    # 1e-2 is two thirds of the way from 1e-4 to 1e-1 in log10; linearly it would be ~0.099.
    u = s.to_unit({"x": 0.0, "lr": 1e-2, "n": 1, "c": "a"})
    assert u[1] == pytest.approx(2 / 3)
    assert s.to_user([0, 1 / 3, 0, 1, 0, 0])["lr"] == pytest.approx(1e-3)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_integer_goes_to_the_centre_of_its_slice(n):
    s = mixed()
    u = s.to_unit({"x": 0.0, "lr": 1e-3, "n": n, "c": "a"})
    # [1, 4] has four slices of width 1/4; n sits at the middle of its own.
    assert u[2] == pytest.approx((n - 1 + 0.5) / 4)
    assert s.to_user(u)["n"] == n


@pytest.mark.parametrize("u, n", [(0.0, 1), (0.2499, 1), (0.25, 2), (0.74, 3), (0.76, 4), (1.0, 4)])
def test_integer_slices(u, n):
    assert mixed().to_user([0.5, 0.5, u, 1, 0, 0])["n"] == n
    assert isinstance(mixed().to_user([0.5, 0.5, u, 1, 0, 0])["n"], int)


@pytest.mark.parametrize("choice, onehot", [("a", [1, 0, 0]), ("b", [0, 1, 0]), ("c", [0, 0, 1])])
def test_categorical_is_one_hot(choice, onehot):
    s = mixed()
    u = s.to_unit({"x": 0.0, "lr": 1e-3, "n": 2, "c": choice})
    assert u[3:] == onehot
    assert s.to_user(u)["c"] == choice


def test_categorical_from_unit_takes_the_largest_coordinate():
    s = mixed()
    assert s.to_user([0.5, 0.5, 0.5, 0.2, 0.1, 0.7])["c"] == "c"
    assert s.to_user([0.5, 0.5, 0.5, 0.2, 0.9, 0.7])["c"] == "b"


def test_round_trip_user_unit_user():
    s = mixed()
    rng = random.Random(7)
    for _ in range(200):
        u = [rng.random() for _ in range(s.dim)]
        user = s.to_user(u)
        assert set(user) == set(s.names)
        again = s.to_user(s.to_unit(user))
        assert again["n"] == user["n"] and again["c"] == user["c"]
        assert again["x"] == pytest.approx(user["x"], abs=1e-12)
        assert again["lr"] == pytest.approx(user["lr"], rel=1e-9)
        assert -1 <= user["x"] <= 3 and 1e-4 <= user["lr"] <= 1e-1 and 1 <= user["n"] <= 4


def test_round_trip_unit_user_unit_for_reals():
    s = agora.Space([agora.real("x", -5, 10), agora.log_real("y", 0.5, 8)])
    rng = random.Random(3)
    for _ in range(100):
        u = [rng.random(), rng.random()]
        assert s.to_unit(s.to_user(u)) == pytest.approx(u, abs=1e-9)


def test_dict_and_sequence_points_agree():
    s = mixed()
    d = {"x": 2.5, "lr": 0.05, "n": 3, "c": "c"}
    assert s.to_unit(d) == s.to_unit([2.5, 0.05, 3, "c"]) == s.to_unit((2.5, 0.05, 3, "c"))


# --- numpy ---------------------------------------------------------------------------------


def test_numpy_arrays_as_points():
    s = agora.Space([agora.real("x", -5, 10), agora.real("y", 0, 15)])
    assert s.to_unit(np.array([2.5, 7.5])) == pytest.approx([0.5, 0.5])
    assert s.to_user(np.array([0.5, 0.5])) == pytest.approx({"x": 2.5, "y": 7.5})
    assert s.to_user(np.array([0.5, 0.5], dtype=np.float32)) == pytest.approx({"x": 2.5, "y": 7.5})


def test_numpy_scalars_in_point_dicts():
    s = mixed()
    plain = s.to_unit({"x": 1.0, "lr": 0.01, "n": 3, "c": "b"})
    np_point = {"x": np.float64(1.0), "lr": np.float64(0.01), "n": np.int64(3), "c": np.str_("b")}
    assert s.to_unit(np_point) == pytest.approx(plain)


def test_numpy_features_for_candidates():
    features = np.array([[0.0, 0.1], [0.5, 0.5], [1.0, 1.0]])
    s = agora.Space.candidates(["r1", "r2", "r3"], features)
    assert s == agora.Space.candidates(["r1", "r2", "r3"], features.tolist())
    assert s.to_unit("r2") == [0.5, 0.5]


# --- candidate tables ------------------------------------------------------------------------


def table() -> agora.Space:
    return agora.Space.candidates(["r1", "r2", "r3"], [[0.0, 0.1], [0.5, 0.5], [1.0, 1.0]])


def test_candidates_shape():
    s = table()
    assert s.kind == "candidates"
    assert (len(s), s.dim, s.names, s.params) == (3, 2, ["r1", "r2", "r3"], [])


def test_candidate_by_name_or_index_gives_its_features():
    s = table()
    assert s.to_unit("r3") == s.to_unit(2) == [1.0, 1.0]
    assert s.to_unit(0) == [0.0, 0.1]


def test_candidates_have_no_unit_points():
    with pytest.raises(ValueError, match="box"):
        table().to_user([0.5, 0.5])


def test_candidate_out_of_range():
    with pytest.raises(ValueError, match=r"row 3 is out of range 0\.\.3"):
        table().to_unit(3)
    with pytest.raises(ValueError, match="out of range"):
        table().to_unit(-1)


def test_unknown_candidate_name():
    with pytest.raises(KeyError, match="r1, r2, r3"):
        table().to_unit("r9")


def test_candidate_rows_must_match():
    with pytest.raises(ValueError, match=r"features\[1\]"):
        agora.Space.candidates(["a", "b"], [[0.1, 0.2], [0.3]])
    with pytest.raises(ValueError, match="names"):
        agora.Space.candidates(["a"], [[0.1], [0.3]])


# --- JSON ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("space", [mixed(), table(), agora.Space.reals([(0, 1)])], ids=["box", "table", "reals"])
def test_json_round_trip(space):
    text = space.to_json()
    again = agora.Space.from_json(text)
    assert again == space
    assert again.to_json() == text
    assert json.loads(text)["kind"] == space.kind


def test_json_form_names_every_parameter():
    doc = json.loads(mixed().to_json())
    assert [p["type"] for p in doc["params"]] == ["real", "log_real", "integer", "categorical"]
    assert doc["params"][3]["choices"] == ["a", "b", "c"]


def test_from_json_checks_the_space():
    with pytest.raises(ValueError, match="space"):
        agora.Space.from_json("{not json")
    bad = '{"kind":"box","params":[{"type":"real","name":"x","lo":2.0,"hi":1.0}]}'
    with pytest.raises(ValueError, match=r"params\[0\]\.hi"):
        agora.Space.from_json(bad)


def test_spaces_compare_by_value():
    assert mixed() == mixed()
    assert mixed() != table()
    assert agora.Space.reals([(0, 1)]) != agora.Space.reals([(0, 2)])


def test_repr_rebuilds_a_box():
    s = mixed()
    assert eval(repr(s), {"agora": agora}) == s


def test_parameter_names_are_distinct():
    with pytest.raises(ValueError, match=r"params\[1\]\.name.*`x` appears twice"):
        agora.Space([agora.real("x", 0, 1), agora.integer("x", 0, 3)])
    doc = '{"kind":"box","params":[{"type":"real","name":"x","lo":0,"hi":1},{"type":"real","name":"x","lo":0,"hi":1}]}'
    with pytest.raises(ValueError, match="appears twice"):
        agora.Space.from_json(doc)


def test_unit_points_are_finite():
    with pytest.raises(ValueError, match=r"u\[1\].*finite"):
        mixed().to_user([0.5, math.nan, 0.5, 1, 0, 0])
