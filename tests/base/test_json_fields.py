"""base/json_fields.py: absent, null or empty reads as none, a value of the right type passes as it is, and any
other type is a TypeError (what using it would have raised), so readers narrowed through them behave as before."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from nomad_eval.base.json_fields import fields, items, number, real, whole


def test_absent_or_empty_reads_as_none() -> None:
    assert fields(None) == {} and fields({}) == {} and items(None) == [] and items([]) == []
    assert number(None) is None


def test_values_of_the_right_type_pass_as_they_are() -> None:
    obj = {"a": 1}
    assert fields(obj) is obj
    assert items((1, 2)) == [1, 2]
    assert number(3) == 3 and isinstance(number(3), int) and number(0.5) == 0.5
    assert whole("5") == 5 and whole(5.0) == 5 and real("0.25") == 0.25 and real(1) == 1.0


@pytest.mark.parametrize(("read", "value"), [(fields, [1]), (fields, "x"), (items, {"a": 1}), (items, "ab"),
                                             (number, "1"), (whole, [1]), (real, None)])
def test_another_type_is_a_type_error(read: Callable[[object], object], value: object) -> None:
    with pytest.raises(TypeError):
        read(value)
